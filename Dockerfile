# gwsim and gwconform in one small image (docs/deploy.md).
#   docker build -t gwtools .                                # or make image: tagged, with its version
#   export GWSIM_ADMIN_TOKEN=$(openssl rand -hex 16)          # gwsim serve, demo fleet: beyond loopback
#   docker run --rm -p 127.0.0.1:8080:8080 -e GWSIM_ADMIN_TOKEN gwtools   # it starts only with a token
#   docker run --rm -p 127.0.0.1:8080:8080 -e GWSIM_ADMIN=open gwtools    # or an open admin API said on purpose
#   docker run --rm gwtools serve --seed 1 --gateways 3       # gwsim's own arguments
#   docker run --rm gwtools gwsim --version                   # or name the program:
#   docker run --rm --user "$(id -u):$(id -g)" -v "$PWD/reports:/reports" gwtools gwconform run --report-dir /reports

# Build: static binaries (no cgo), so the runtime image needs no libc of ours.
# VERSION and COMMIT (make image sets them: docs/deploy.md, "Building and
# publishing the image") are what gwsim --version and gwsim_build_info
# report; the build context has no .git, so without them it is "(devel)".
FROM golang:1.26-alpine AS build
ARG VERSION=""
ARG COMMIT=""
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0 GOOS=linux
RUN stamp="-X github.com/gwdmi/gwtools/gatewayapi/version.stamped=${VERSION} -X github.com/gwdmi/gwtools/gatewayapi/version.stampedCommit=${COMMIT}" && \
    go build -trimpath -ldflags="-s -w $stamp" -o /out/gwsim ./cmd/gwsim && \
    go build -trimpath -ldflags="-s -w $stamp" -o /out/gwconform ./cmd/gwconform

# Run: Alpine for its busybox wget (the health check, the Kubernetes Job's
# wait for gwsim) and CA certificates (gwconform against https:// targets);
# an unprivileged user. /reports and /var/lib/gwsim are writable by any
# user (sticky, like /tmp), so that `--user "$(id -u):$(id -g)"`, which a
# bind-mounted reports directory needs, and named volumes both work.
FROM alpine:3.22 AS run
RUN apk add --no-cache ca-certificates && \
    addgroup -S -g 10001 gwtools && adduser -S -D -H -u 10001 -G gwtools gwtools && \
    mkdir -p /reports /var/lib/gwsim && chown 10001:10001 /reports /var/lib/gwsim && \
    chmod 1777 /reports /var/lib/gwsim
COPY --from=build /out/gwsim /out/gwconform /usr/local/bin/
USER 10001:10001
WORKDIR /var/lib/gwsim
EXPOSE 8080
# /_sim/health answers {"status":"ok"} (and says degraded when the store is lost).
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD wget -q -O /dev/null http://127.0.0.1:8080/_sim/health || exit 1
# The entrypoint rule (gwsim's Entry): a first argument gwsim or gwconform
# runs that program with the rest; anything else is gwsim's arguments. No
# shell: gwsim hands over to gwconform beside it with exec.
ENTRYPOINT ["gwsim"]
CMD ["serve", "--addr", "0.0.0.0:8080", "--log-format", "json"]
