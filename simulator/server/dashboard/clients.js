// gwsim dashboard, the app's side: the client report (GET /_sim/clients)
// and the scenario being played (GET /_sim/scenario), redrawn every two
// seconds while the dashboard is shown. Data goes into the page as text,
// never as HTML.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, ...children) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // count is "1 request", "2 requests".
  function count(n, noun) { return n + " " + noun + (n === 1 ? "" : "s"); }

  async function get(path) {
    try {
      const res = await fetch(path, { credentials: "same-origin" });
      if (res.status !== 200) return { status: res.status, data: null };
      return { status: 200, data: await res.json() };
    } catch (e) {
      return { status: 0, data: null };
    }
  }

  function drawClients(rep) {
    const box = $("clients");
    box.replaceChildren();
    if (!rep.clients.length) {
      box.append(el("p", "muted", "No app has sent a request yet."));
      return;
    }
    for (const c of rep.clients) {
      const failed = c.judgements.filter((j) => !j.passed);
      const card = el("div", "client" + (failed.length ? " bad" : ""));
      card.append(el("div", "client-head", el("strong", "", c.client), " ",
        el("span", "muted", c.requests + " requests"),
        c.skew ? el("span", "muted", " · clock " + (c.skew.last_seconds >= 0 ? "+" : "") + c.skew.last_seconds + " s") : null,
        el("span", "tag" + (failed.length ? " bad" : ""), failed.length ? failed.length + " judgements failed" : "all judgements passed")));
      const ul = el("ul", "judgements");
      for (const j of c.judgements) {
        const li = el("li", j.passed ? "pass" : "fail", (j.passed ? "✓ " : "✗ ") + j.name);
        if (!j.passed) li.append(el("div", "muted", j.violations + "×, latest: " + j.latest));
        ul.append(li);
      }
      card.append(ul);
      if (c.errors.length) {
        card.append(el("div", "muted", "errors received: " +
          c.errors.map((e) => e.status + " " + e.code + " ×" + e.count).join(", ")));
      }
      const cov = c.coverage.map((v) => v.operation + (v.type ? " " + v.type : "") + " (" + v.format + ")");
      if (cov.length) card.append(el("div", "muted", "exercised: " + cov.join(", ")));
      const u = c.untried;
      if (u) {
        const never = [];
        if (u.operations.length) never.push("operations " + u.operations.join(", "));
        if (u.types.length) never.push("device types " + u.types.join(", "));
        if (u.formats.length) never.push("formats " + u.formats.join(", "));
        if (never.length) card.append(el("div", "muted untried", "never sent: " + never.join("; ")));
        if (u.errors.length) card.append(el("div", "muted untried", "never met: " + u.errors.join(", ")));
      }
      for (const p of c.phases || []) {
        const against = Object.entries(p.devices || {}).map(([d, n]) => "…" + d.slice(-6) + " ×" + n).join(", ");
        card.append(el("div", "muted phase" + (p.recovery && p.recovery.ended && !p.recovery.recovered ? " fail" : ""),
          "during " + p.phase + ": " + count(p.requests, "request") + ", " +
          count(p.errors, "error") + ", " + p.retried_before_retry_after + " sent before Retry-After ended" +
          (against ? "; against " + against : "") +
          (p.latency ? "; took " + p.latency.min_ms.toFixed(0) + "–" + p.latency.max_ms.toFixed(0) + " ms" : "") +
          (p.recovery ? "; " + p.recovery.text : "")));
      }
      box.append(card);
    }
  }

  function drawScenario(s) {
    const box = $("scenario");
    box.replaceChildren();
    const state = s.running ? "running, at " + s.elapsed : (s.finished ? "finished" : "stopped");
    box.append(el("div", "", el("strong", "", s.name || "scenario"), " ", el("span", "tag", state)));
    const ol = el("ol", "timeline");
    for (const st of s.steps) {
      const li = el("li", st.active ? "active" : (st.done || st.skipped ? "done" : ""), st.label);
      if (st.skipped) li.append(" ", el("span", "tag", "skipped: " + st.skipped));
      ol.append(li);
    }
    box.append(ol);
  }

  async function tick() {
    if ($("main").hidden) return;
    const c = await get("/_sim/clients");
    $("clients-section").hidden = c.status !== 200;
    if (c.status === 200) {
      drawClients(c.data);
      // Whose requests: this process's, or every replica's (on Redis).
      const n = (c.data.replicas || []).length;
      $("clients-scope").textContent = "Covers " + c.data.scope + (n > 1 ? " (" + n + " replicas, merged through Redis)" : "") + ".";
    }
    const s = await get("/_sim/scenario");
    $("scenario-section").hidden = s.status !== 200;
    if (s.status === 200) drawScenario(s.data);
  }

  setInterval(tick, 2000);
  setTimeout(tick, 300);
})();
