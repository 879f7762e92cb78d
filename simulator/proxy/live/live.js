// gwsim proxy's live page: what the proxy found on each side, redrawn
// every two seconds from GET /_sim/clients (the apps and the service) and
// GET /_sim/journal (each exchange). Data goes into the page as text,
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

  async function get(path) {
    try {
      const res = await fetch(path, { credentials: "same-origin", cache: "no-store" });
      if (res.status !== 200) return { status: res.status, data: null };
      return { status: 200, data: await res.json() };
    } catch (e) {
      return { status: 0, data: null };
    }
  }

  function judgements(js) {
    const ul = el("ul", "judgements");
    for (const j of js) {
      const li = el("li", j.passed ? "pass" : "fail", (j.passed ? "✓ " : "✗ ") + j.name);
      if (!j.passed) li.append(el("div", "latest", j.violations + "×, latest: " + j.latest));
      ul.append(li);
    }
    return ul;
  }

  function drawService(s) {
    const box = $("service");
    box.replaceChildren();
    if (!s) return;
    const failed = s.judgements.filter((j) => !j.passed);
    const card = el("div", "card" + (failed.length ? " bad" : ""));
    card.append(el("div", "head", el("strong", "", s.upstream), el("span", "muted", s.answers + " answers"),
      el("span", "tag" + (failed.length ? " bad" : ""), failed.length ? failed.length + " rules broken" : "no rule broken")));
    card.append(judgements(s.judgements));
    box.append(card);
  }

  function drawClients(cs) {
    const box = $("clients");
    box.replaceChildren();
    if (!cs.length) {
      box.append(el("p", "muted", "No app has sent a request yet."));
      return;
    }
    for (const c of cs) {
      const failed = c.judgements.filter((j) => !j.passed);
      const card = el("div", "card client" + (failed.length ? " bad" : ""));
      card.append(el("div", "head", el("strong", "", c.client), el("span", "muted", c.requests + " requests"),
        el("span", "tag" + (failed.length ? " bad" : ""), failed.length ? failed.length + " judgements failed" : "all judgements passed")));
      card.append(judgements(c.judgements));
      if (c.errors.length) {
        card.append(el("div", "muted", "errors received: " + c.errors.map((e) => e.status + " " + e.code + " ×" + e.count).join(", ")));
      }
      box.append(card);
    }
  }

  function drawJournal(entries) {
    const tbody = $("journal").querySelector("tbody");
    tbody.replaceChildren();
    for (const e of entries.slice().reverse().slice(0, 100)) {
      const bad = e.request_violation || (e.answer_violations && e.answer_violations.length);
      const v = el("td", "");
      if (e.request_violation) v.append(el("span", "v app", "app: " + e.request_violation));
      for (const a of e.answer_violations || []) v.append(el("span", "v service", "service: " + a));
      if (e.blocked) v.append(el("span", "v blocked", "blocked by the proxy"));
      if (!bad && !e.blocked && e.status >= 400) {
        // An error answer that breaks no rule: the service refused, as it
        // may; the app must handle it.
        v.append(el("span", "v none", "an error answer, no rule broken"));
      }
      tbody.append(el("tr", bad ? "bad" : (e.status >= 400 ? "refused" : ""),
        el("td", "", (e.time || "").substring(11, 19)), el("td", "", e.operation), el("td", "", e.format || ""),
        el("td", "", e.client || ""), el("td", "", e.status), v));
    }
    if (!entries.length) tbody.append(el("tr", "", el("td", "muted", "No exchange yet.")));
  }

  function summary(rep) {
    const s = $("summary");
    const appBad = rep.clients.reduce((n, c) => n + c.judgements.filter((j) => !j.passed).length, 0);
    const svcBad = rep.service ? rep.service.judgements.filter((j) => !j.passed).length : 0;
    s.className = "summary " + (appBad + svcBad ? "bad" : "good");
    s.textContent = appBad + svcBad ? "Apps: " + appBad + " judgements failed · service: " + svcBad + " rules broken"
      : "No violation on either side.";
  }

  function show(signedIn, tokenRequired) {
    $("main").hidden = !signedIn;
    $("signin").hidden = signedIn;
    $("signout").hidden = !(signedIn && tokenRequired);
  }

  let tokenRequired = false;

  async function tick() {
    const rep = await get("/_sim/clients");
    if (rep.status === 401) {
      show(false, true);
      $("live").className = "live off";
      $("live").textContent = "signed out";
      return;
    }
    if (rep.status !== 200) {
      $("live").className = "live off";
      $("live").textContent = "offline";
      return;
    }
    show(true, tokenRequired);
    $("live").className = "live";
    $("live").textContent = "live";
    if (rep.data.service) $("upstream").textContent = "→ " + rep.data.service.upstream;
    summary(rep.data);
    drawService(rep.data.service);
    drawClients(rep.data.clients);
    const j = await get("/_sim/journal");
    if (j.status === 200) drawJournal(j.data || []);
  }

  $("signin-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    $("signin-error").textContent = "";
    const res = await fetch("/_sim/session", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token: $("token").value }),
    });
    $("token").value = "";
    if (res.status !== 200) {
      $("signin-error").textContent = "The token was refused.";
      return;
    }
    tick();
  });

  $("signout").addEventListener("click", async () => {
    await fetch("/_sim/session", { method: "DELETE", credentials: "same-origin" });
    tick();
  });

  (async () => {
    const s = await get("/_sim/session");
    if (s.status === 200) tokenRequired = !!s.data.token_required;
    tick();
    setInterval(tick, 2000);
  })();
})();
