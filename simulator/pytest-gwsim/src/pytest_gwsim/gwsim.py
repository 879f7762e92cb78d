"""Start, reach and stop one gwsim serve process.

gwsim runs in a process group of its own on a free loopback port, with an
admin token of its own (given in its environment, never on its command
line, where every user of the machine could read it). It is stopped on
any exit of the Python process that started it: at the end of the
session, at exit (atexit), on SIGTERM or SIGHUP (what CI timeouts send),
and, on Linux, even when that process is killed outright (the kernel
sends gwsim SIGTERM when its parent dies: PR_SET_PDEATHSIG).
"""

import atexit
import ctypes
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone


class GwsimError(RuntimeError):
    """gwsim could not be started, or another server answers in its place."""


# Every gwsim started here and not yet stopped.
_running = set()


def _stop_all():
    for g in list(_running):
        g.stop()


atexit.register(_stop_all)

_previous = {}


def _on_signal(signum, frame):
    _stop_all()
    previous = _previous.get(signum)
    if callable(previous):
        previous(signum, frame)
        return
    # What the signal would have done had no handler been set.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _catch_signals():
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signum in _previous:
            continue
        try:
            _previous[signum] = signal.signal(signum, _on_signal)
        except ValueError:
            pass  # not the main thread: atexit and the parent-death signal remain


def _die_with(parent):
    """In the child, before gwsim runs: SIGTERM to it when parent dies."""

    def preexec():
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return  # not Linux: atexit and the signal handlers remain
        if os.getppid() != parent:
            os._exit(1)  # the parent died before prctl took effect

    return preexec


def free_port():
    """A port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_binary(binary=None):
    """The gwsim program: binary, else $GWSIM_BIN, else gwsim on PATH."""
    binary = binary or os.environ.get("GWSIM_BIN") or shutil.which("gwsim")
    if not binary:
        raise GwsimError(
            "gwsim not found: install it (go install github.com/gwdmi/gwtools/cmd/gwsim@latest), "
            "or give its path in $GWSIM_BIN or --gwsim-bin"
        )
    return binary


class Gwsim:
    """One running gwsim: where it listens and what an app signs with.

    url: the base URL (http://127.0.0.1:PORT); token: its admin token;
    api_key, secret, myservice_id, mac: the fleet's first account, as
    gwsim's banner says them; devices: {"sn", "type", "name"} of the
    banner's devices; pid.
    """

    def __init__(self, proc, url, token, logdir):
        self.proc = proc
        self.pid = proc.pid
        self.url = url
        self.token = token
        self.logdir = logdir
        self.api_key = self.secret = self.myservice_id = self.mac = None
        self.devices = []

    # -- credentials -------------------------------------------------------

    @staticmethod
    def timestamp(when=None):
        """when (now by default) as the interface's YYYYMMDDHHMMSS, UTC."""
        when = when or datetime.now(timezone.utc)
        return when.astimezone(timezone.utc).strftime("%Y%m%d%H%M%S")

    def sign(self, timestamp):
        """md5(api_key + secret + timestamp), lower-case hex."""
        return hashlib.md5((self.api_key + self.secret + timestamp).encode()).hexdigest()

    def device(self, type_name):
        """The sn of the first device of a type."""
        for d in self.devices:
            if d["type"] == type_name:
                return d["sn"]
        raise KeyError(type_name)

    # -- the admin API -----------------------------------------------------

    def admin(self, method, path, body=None):
        """An admin call with the token: (status, the JSON answer)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": "Bearer " + self.token,
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as res:
                status, raw = res.status, res.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw or b"null")
        except ValueError:
            return status, raw.decode(errors="replace")

    def _ok(self, method, path, body=None):
        status, answer = self.admin(method, path, body)
        if status != 200:
            raise GwsimError("%s %s: %d %s" % (method, path, status, answer))
        return answer

    def reset(self):
        """Every device as the fleet has it, message logs emptied."""
        return self._ok("POST", "/_sim/reset")

    def set_faults(self, faults):
        """PUT /_sim/faults: {"offline_gateways": [...], "retry_after": "none", ...}."""
        return self._ok("PUT", "/_sim/faults", faults)

    def clear_faults(self):
        return self._ok("DELETE", "/_sim/faults")

    def state(self, mac, sn):
        """What gwsim holds of one device."""
        return self._ok("GET", "/_sim/gateways/%s/devices/%s" % (mac, sn))

    def report(self):
        """The client report (docs/clients.md)."""
        return self._ok("GET", "/_sim/clients")

    def clear_report(self):
        return self._ok("DELETE", "/_sim/clients")

    def broken(self):
        """Every judgement an app failed: "client judgement: latest breach"."""
        out = []
        for c in self.report().get("clients") or []:
            for j in c.get("judgements") or []:
                if not j.get("passed"):
                    out.append("%s %s: %s" % (c.get("client"), j.get("id"), j.get("latest")))
        return out

    # -- the process -------------------------------------------------------

    def running(self):
        return self.proc.poll() is None

    def log(self):
        """What gwsim wrote to its standard error (its log)."""
        try:
            with open(os.path.join(self.logdir, "stderr"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self, timeout=10):
        """SIGTERM to gwsim's process group, SIGKILL after timeout."""
        _running.discard(self)
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self.logdir, ignore_errors=True)


_BANNER = {
    "api_key": re.compile(r"^\s*api_key:\s+(\S+)\s*$", re.M),
    "secret": re.compile(r"^\s*secret:\s+(\S+)", re.M),
    "myservice_id": re.compile(r"^\s*myservice_id:\s+(\S+)\s*$", re.M),
    "mac": re.compile(r"^\s*mac:\s+(\S+)\s*$", re.M),
}
_DEVICE = re.compile(r"^\s+([0-9a-fA-F]{32})\s{2,}(.+?)\s{2,}(.+?)\s*$", re.M)


def start(binary=None, fleet=None, args=(), port=0, timeout=10.0):
    """Start gwsim serve and return it once it serves, its own.

    It fails at once (GwsimError) when gwsim exits before it serves (a
    port taken, a bad fleet), and when what answers on the port is not
    the gwsim it started (an orphan of an earlier run: it does not know
    this token).
    """
    binary = find_binary(binary)
    port = port or free_port()
    url = "http://127.0.0.1:%d" % port
    token = secrets.token_hex(16)
    logdir = tempfile.mkdtemp(prefix="gwsim-")
    cmd = [binary, "serve", "--addr", "127.0.0.1:%d" % port]
    if fleet:
        cmd += ["--fleet", str(fleet)]
    cmd += list(args)
    env = dict(os.environ, GWSIM_ADMIN_TOKEN=token)
    with open(os.path.join(logdir, "stdout"), "wb") as out, open(os.path.join(logdir, "stderr"), "wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                start_new_session=True, preexec_fn=_die_with(os.getpid()))
    g = Gwsim(proc, url, token, logdir)
    _running.add(g)
    _catch_signals()
    try:
        _wait(g, timeout)
        _read_banner(g, timeout)
    except BaseException:
        g.stop()
        raise
    return g


def _wait(g, timeout):
    deadline = time.monotonic() + timeout
    while True:
        if not g.running():
            raise GwsimError("gwsim serve exited (%s) before it served on %s: %s"
                             % (g.proc.returncode, g.url, g.log().strip()[-2000:] or "no log"))
        try:
            with urllib.request.urlopen(g.url + "/_sim/health", timeout=1):
                pass
            break
        except urllib.error.HTTPError:
            break  # something answers: see whose it is below
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise GwsimError("gwsim serve did not answer %s/_sim/health in %gs" % (g.url, timeout))
        time.sleep(0.05)
    status, _ = g.admin("GET", "/_sim/faults")
    if not g.running() or status != 200:
        raise GwsimError("what answers on %s is not the gwsim this run started (admin token refused: %d; gwsim %s): "
                         "another process holds the port, maybe a gwsim an earlier run left behind"
                         % (g.url, status, "running" if g.running() else "exited: " + g.log().strip()[-500:]))


def _read_banner(g, timeout):
    """The credentials and devices gwsim's banner names. A fleet file's
    secret is not shown there (api_key is masked): the app has its own."""
    deadline = time.monotonic() + timeout
    path = os.path.join(g.logdir, "stdout")
    while True:
        with open(path, errors="replace") as f:
            banner = f.read()
        if "credentials (" in banner and "devices:" in banner:
            break
        if time.monotonic() > deadline:
            if "gwsim listening on" in banner:
                break  # a fleet with no credentials to show
            raise GwsimError("gwsim printed no banner:\n" + banner)
        time.sleep(0.05)
    for k, r in _BANNER.items():
        m = r.search(banner)
        value = m.group(1) if m else None
        if value and ("\u2026" in value or value == "not"):
            value = None  # masked, or "not shown: it is in FILE"
        setattr(g, k, value)
    if "devices:" in banner:
        devices = banner.split("devices:", 1)[1]
        g.devices = [{"sn": m.group(1), "type": m.group(2), "name": m.group(3)} for m in _DEVICE.finditer(devices)]
