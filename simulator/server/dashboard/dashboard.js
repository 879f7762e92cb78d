// gwsim dashboard: plain JavaScript, no framework. It draws GET
// /_sim/dashboard/data and redraws on every server-sent event of
// GET /_sim/events. Data is put into the page as text (never as HTML).
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  let page = 0;
  let events = null;
  let pending = false;
  let last = null;

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k.startsWith("data-")) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  async function call(method, path, body) {
    const opts = { method, headers: {}, credentials: "same-origin" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(path, opts);
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    return { status: res.status, data };
  }

  function errorText(r) {
    const e = r.data && r.data.error;
    if (!e) return "HTTP " + r.status;
    return e.code + (e.field ? " (" + e.field + ")" : "") + ": " + e.message;
  }

  // --- sign-in -------------------------------------------------------------

  async function start() {
    const r = await call("GET", "/_sim/session");
    const s = r.data || {};
    $("signout").hidden = !s.token_required || !s.signed_in;
    if (s.token_required && !s.signed_in) {
      $("loading").hidden = true;
      $("signin").hidden = false;
      $("main").hidden = true;
      $("token").focus();
      return;
    }
    $("signin").hidden = true;
    $("main").hidden = false;
    await refresh();
    listen();
  }

  $("signin-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const token = $("token").value;
    $("token").value = "";
    const r = await call("POST", "/_sim/session", { token });
    if (r.status !== 200) {
      $("signin-error").textContent = r.status === 401 ? "Wrong token." : errorText(r);
      return;
    }
    $("signin-error").textContent = "";
    start();
  });

  $("signout").addEventListener("click", async () => {
    await call("DELETE", "/_sim/session");
    if (events) { events.close(); events = null; }
    setLive(false);
    start();
  });

  // --- live updates --------------------------------------------------------

  function setLive(on) {
    $("live").className = "live " + (on ? "on" : "off");
    $("live").textContent = on ? "live" : "offline";
  }

  function listen() {
    if (events) return;
    events = new EventSource("/_sim/events");
    events.onopen = () => setLive(true);
    events.onerror = () => {
      setLive(false);
      if (events && events.readyState === EventSource.CLOSED) {
        events = null;
        setTimeout(start, 2000); // signed out, or the server went away
      }
    };
    events.addEventListener("change", (ev) => {
      let c = null;
      try { c = JSON.parse(ev.data); } catch (e) { c = null; }
      if (c && c.entry && c.entry.sn) flashLater.add(c.entry.mac + "/" + c.entry.sn);
      if (c) addEvent(c);
      schedule();
    });
  }

  const flashLater = new Set();

  // schedule coalesces a burst of events into one redraw.
  function schedule() {
    if (pending) return;
    pending = true;
    setTimeout(async () => {
      pending = false;
      await refresh();
    }, 80);
  }

  async function refresh() {
    const r = await call("GET", "/_sim/dashboard/data?page=" + page);
    if (r.status === 401) { start(); return; }
    if (r.status !== 200) return;
    last = r.data;
    draw(r.data);
  }

  $("prev").addEventListener("click", () => { if (page > 0) { page--; refresh(); } });
  $("next").addEventListener("click", () => { if (last && page < last.pages - 1) { page++; refresh(); } });

  // --- drawing -------------------------------------------------------------

  // count is "1 device", "2 devices".
  function count(n, noun) { return n + " " + noun + (n === 1 ? "" : "s"); }

  function draw(d) {
    page = d.page;
    $("loading").hidden = true;
    $("summary").textContent = count(d.accounts, "account") + ", " + count(d.gateways, "gateway") + ", " +
      count(d.devices, "device") + "; " + count(d.requests, "request") + " served";
    const shown = Math.min(d.devices, d.pages * d.page_size);
    $("page").textContent = "page " + (d.page + 1) + " of " + d.pages +
      (shown < d.devices ? " (the first " + shown + " devices; GET /_sim/state has all)" : "");
    $("pager").hidden = d.pages <= 1;
    drawDevices(d);
    drawJournal(d.journal, d.names);
    drawFaults(d.faults);
    $("replica").textContent = d.replica ? "replica " + d.replica : "";
    $("replay").hidden = !d.replay;
    $("replay").textContent = d.replay ? "REPLAY" : "";
    $("replay").title = d.replay || "";
  }

  // --- live events of every replica ----------------------------------------

  const maxEvents = 30;

  // addEvent lists one event of the feed, newest first, naming the
  // replica where it happened.
  function addEvent(c) {
    const list = $("events");
    if (list.firstElementChild && list.firstElementChild.classList.contains("muted")) list.replaceChildren();
    const e = c.entry;
    let what = c.kind;
    if (e) {
      what = e.path.replace(/^\/v1\/services\//, "") + " " + e.status +
        (e.error_code ? " " + e.error_code : "") + (e.sn ? " " + e.sn : e.mac ? " " + e.mac : "");
    }
    const at = e && e.time ? e.time.substring(11, 23) : new Date().toISOString().substring(11, 23);
    list.prepend(el("li", { class: "event", "data-replica": c.replica || "", "data-kind": c.kind },
      el("span", { class: "mono" }, at), " ",
      el("span", { class: "tag replica" }, c.replica || "?"), " ", what));
    while (list.children.length > maxEvents) list.lastElementChild.remove();
  }

  function isOn(v) { return v === "On"; }

  function switchWidget(label, value) {
    return el("span", { class: "switch " + (isOn(value) ? "on" : "off"), "data-field": label, "data-value": value },
      el("span", { class: "track" }), label + " " + value);
  }

  function deviceCard(mac, dv, faults) {
    const st = dv.state || {};
    const ref = mac + "/" + dv.sn;
    const unreachable = faults.unreachable_devices.some((u) => u.mac === mac && u.sn === dv.sn);
    const slow = faults.slow_devices.find((u) => u.mac === mac && u.sn === dv.sn);
    const card = el("div", { class: "device" + (unreachable ? " unreachable" : ""), "data-mac": mac, "data-sn": dv.sn, "data-type": dv.type },
      el("div", { class: "name" }, dv.name || "(no name)"),
      el("div", { class: "type" }, dv.type),
      el("div", { class: "sn" }, dv.sn));
    const used = new Set();
    if ("dimming" in st) {
      used.add("dimming");
      const bulb = el("div", { class: "bulb", "data-dimming": st.dimming, title: "dimming " + st.dimming });
      bulb.style.setProperty("--level", String(st.dimming / 100));
      card.append(el("div", { class: "widget" }, bulb, el("span", { class: "level" }, st.dimming + "%")));
    }
    if ("mode" in st || "cooling_point" in st) {
      ["mode", "fan", "cooling_point", "heating_point"].forEach((k) => used.add(k));
      card.append(el("div", { class: "widget" }, el("div", { class: "thermostat", "data-mode": st.mode, "data-fan": st.fan },
        el("span", {}, "mode"), el("span", { class: "big" }, st.mode),
        el("span", {}, "fan"), el("span", {}, st.fan),
        el("span", { class: "cool" }, "cool ≥"), el("span", { class: "cool big", "data-field": "cooling_point" }, st.cooling_point + " °C"),
        el("span", { class: "heat" }, "heat ≤"), el("span", { class: "heat big", "data-field": "heating_point" }, st.heating_point + " °C"))));
    }
    const sw = el("div", { class: "widget" });
    for (const k of ["io", "Relay1", "Relay2"]) {
      if (k in st) { used.add(k); sw.append(switchWidget(k, st[k])); }
    }
    if (sw.childNodes.length) card.append(sw);
    if ("code" in st) {
      used.add("code");
      card.append(el("div", { class: "widget ir" }, "infrared code ", el("span", { class: "code", "data-field": "code" }, st.code)));
    }
    if ("opt" in st) {
      used.add("opt");
      card.append(el("div", { class: "widget opt" }, "opt ", el("code", { "data-field": "opt" }, st.opt)));
    }
    for (const [k, v] of Object.entries(st)) {
      if (!used.has(k)) card.append(el("div", { class: "widget opt" }, k + " ", el("code", {}, String(v))));
    }
    if (unreachable) card.append(el("span", { class: "tag bad" }, "unreachable"));
    if (slow) card.append(el("span", { class: "tag bad" }, "slow +" + slow.latency));
    const btn = el("button", { type: "button", class: "toggle-unreachable", title: "fault injection" }, unreachable ? "make reachable" : "make unreachable");
    btn.addEventListener("click", () => toggleUnreachable(mac, dv.sn, !unreachable));
    card.append(el("div", { class: "widget" }, btn));
    if (flashLater.has(ref)) {
      card.classList.add("flash");
      setTimeout(() => card.classList.remove("flash"), 600);
    }
    return card;
  }

  function drawDevices(d) {
    const root = $("devices");
    const frag = document.createDocumentFragment();
    const offline = new Set(d.faults.offline_gateways);
    for (const a of d.state) {
      const acc = el("div", { class: "account" }, el("h3", {}, "Account ", el("code", {}, a.myservice_id)));
      for (const g of a.gateways) {
        const gw = el("div", { class: "gateway" + (offline.has(g.mac) ? " offline" : ""), "data-mac": g.mac },
          el("div", { class: "gw-head" }, el("strong", {}, "Gateway "), el("code", {}, g.mac),
            el("span", { class: "tag" }, count(g.devices.length, "device")),
            el("span", { class: "tag" }, count(g.messages_total, "message")),
            offline.has(g.mac) ? el("span", { class: "tag bad" }, "offline") : null));
        const grid = el("div", { class: "grid" });
        for (const dv of g.devices) grid.append(deviceCard(g.mac, dv, d.faults));
        gw.append(grid);
        if (g.messages && g.messages.length) {
          const ul = el("ul", {});
          for (const m of g.messages.slice().reverse()) {
            // store.Message: {time, message_type, message_value}, shown "type: value".
            ul.append(el("li", { class: "message", "data-type": m.message_type },
              el("span", { class: "muted" }, m.time.substring(11, 23) + " "),
              el("span", { class: "message-type" }, m.message_type), ": ",
              el("code", { class: "message-value" }, m.message_value)));
          }
          gw.append(el("div", { class: "messages" }, "Messages, newest first", ul));
        }
        acc.append(gw);
      }
      frag.append(acc);
    }
    flashLater.clear();
    root.replaceChildren(frag);
  }

  // The journal: each row names its device by name (the sn in its title),
  // its app (masked key) and whether a recording answered it; filters by
  // device, code and app; a row opens to its request and answer.
  let journalNames = {};
  let journalEntries = [];
  const opened = new Set();

  function deviceName(e) {
    if (!e.mac && !e.sn) return "";
    const n = journalNames[e.mac + "/" + e.sn];
    if (n) return n;
    return e.sn ? "…" + e.sn.slice(-6) : e.mac;
  }

  function codeOf(e) { return e.status + (e.error_code ? " " + e.error_code : ""); }

  // refOf names what a request went to: its gateway, and its device when
  // it names one (a message names none).
  function refOf(e) { return (e.mac || "") + (e.sn ? "/" + e.sn : ""); }

  function fillFilter(id, values) {
    const sel = $(id);
    const keep = sel.value;
    const opts = [el("option", { value: "" }, "all")];
    for (const [v, label] of values) opts.push(el("option", { value: v }, label));
    sel.replaceChildren(...opts);
    sel.value = values.some(([v]) => v === keep) ? keep : "";
  }

  function drawJournal(entries, names) {
    journalEntries = entries;
    journalNames = names || {};
    const devices = new Map(), codes = new Map(), apps = new Map();
    for (const e of entries) {
      if (e.mac || e.sn) devices.set(refOf(e), deviceName(e));
      codes.set(codeOf(e), codeOf(e));
      if (e.app) apps.set(e.app, e.app);
    }
    const sorted = (m) => [...m.entries()].sort((a, b) => a[1].localeCompare(b[1]));
    fillFilter("jf-device", sorted(devices));
    fillFilter("jf-code", sorted(codes));
    fillFilter("jf-app", sorted(apps));
    drawJournalRows();
  }

  function drawJournalRows() {
    const body = $("journal").tBodies[0];
    const frag = document.createDocumentFragment();
    const fd = $("jf-device").value, fc = $("jf-code").value, fa = $("jf-app").value;
    const shown = journalEntries.filter((e) => (!fd || refOf(e) === fd) && (!fc || codeOf(e) === fc) && (!fa || e.app === fa));
    if (!journalEntries.length) frag.append(el("tr", {}, el("td", { colSpan: 6, class: "muted" }, "No requests yet.")));
    else if (!shown.length) frag.append(el("tr", {}, el("td", { colSpan: 6, class: "muted" }, "No request matches the filters.")));
    for (const e of shown) {
      const rejected = e.status >= 400;
      // The operation's last word (command, message, update_name): the
      // whole path is its title.
      const op = e.path.startsWith("/v1/services/") ? e.path.substring(e.path.lastIndexOf("/") + 1) : e.path;
      const tr = el("tr", { class: (rejected ? "rejected" : "ok") + (e.replayed ? " replayed" : "") + (e.id ? " openable" : ""),
        "data-status": e.status, "data-code": e.error_code || "", "data-id": e.id || "", "data-replayed": e.replayed ? "true" : "",
        tabIndex: e.id ? 0 : -1, title: e.id ? "open: request and answer" : "" },
        el("td", { class: "time", title: e.time }, e.time.substring(11, 19)),
        el("td", { title: e.method + " " + e.path }, e.method === "POST" ? op : e.method + " " + op,
          e.replayed ? el("span", { class: "tag replayed-tag", title: "answered from the recording (gwsim serve --replay)" }, "replayed") : null),
        el("td", {}, e.format || ""),
        el("td", { class: "status" }, e.status),
        el("td", {}, e.error_code ? e.error_code + (e.error_field ? " (" + e.error_field + ")" : "") : ""),
        el("td", { class: "device-ref", "data-mac": e.mac || "", "data-sn": e.sn || "", title: (e.mac || "") + (e.sn ? " / " + e.sn : "") },
          deviceName(e), e.app ? el("span", { class: "app muted" }, " " + e.app) : null));
      if (e.id) {
        const toggle = () => { if (opened.has(e.id)) opened.delete(e.id); else opened.add(e.id); drawJournalRows(); };
        tr.addEventListener("click", toggle);
        tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); toggle(); } });
      }
      frag.append(tr);
      if (e.id && opened.has(e.id)) frag.append(exchangeRow(e));
    }
    body.replaceChildren(frag);
  }

  const exchangeCache = new Map();

  function exchangeRow(e) {
    const cell = el("td", { colSpan: 6, class: "exchange" }, el("span", { class: "muted" }, "Loading…"));
    const row = el("tr", { class: "exchange-row", "data-for": e.id }, cell);
    const fill = (x) => {
      if (!x) {
        cell.replaceChildren(el("span", { class: "muted" }, "This request is no longer kept here (the replica that served it keeps its last 256)."));
        return;
      }
      cell.replaceChildren(
        el("div", { class: "x-head" }, "Request", el("span", { class: "muted" }, " " + (x.request_content_type || "no Content-Type"))),
        x.hidden ? el("p", { class: "muted" }, x.hidden) : el("pre", { class: "x-body x-request" }, x.request + (x.request_truncated ? "\n…" : "")),
        el("div", { class: "x-head" }, "Answer " + x.status, el("span", { class: "muted" }, " " + (x.answer_content_type || ""))),
        el("pre", { class: "x-body x-answer" }, x.answer + (x.answer_truncated ? "\n…" : "")));
    };
    if (exchangeCache.has(e.id)) fill(exchangeCache.get(e.id));
    else call("GET", "/_sim/journal/" + e.id).then((r) => {
      const x = r.status === 200 ? r.data : null;
      exchangeCache.set(e.id, x);
      fill(x);
    });
    return row;
  }

  for (const id of ["jf-device", "jf-code", "jf-app"]) $(id).addEventListener("change", drawJournalRows);

  function drawFaults(f) {
    const parts = [];
    if (f.latency !== "0s") parts.push("latency " + f.latency);
    if (f.error_rate) parts.push("error rate " + f.error_rate);
    if (f.offline_gateways.length) parts.push("offline gateways " + f.offline_gateways.join(", "));
    if (f.unreachable_devices.length) parts.push("unreachable " + f.unreachable_devices.map((u) => u.mac + "/" + u.sn).join(", "));
    if (f.slow_devices.length) parts.push("slow " + f.slow_devices.map((u) => u.mac + "/" + u.sn + " +" + u.latency).join(", "));
    for (const [op, r] of Object.entries(f.operation_error_rates)) parts.push(op + " error rate " + r);
    const now = $("faults-now");
    now.replaceChildren(parts.length ? parts.join("; ") : el("span", { class: "none" }, "none"));
    now.setAttribute("data-faults", parts.length ? "some" : "none");
    // Fill the form with what is in force unless the user is typing in it.
    if (!$("faults-form").contains(document.activeElement)) fillForm(f);
  }

  function fillForm(f) {
    $("f-latency").value = f.latency === "0s" ? "" : f.latency;
    $("f-error-rate").value = f.error_rate ? String(f.error_rate) : "";
    $("f-offline").value = f.offline_gateways.join(", ");
    $("f-unreachable").value = f.unreachable_devices.map((u) => u.mac + "/" + u.sn).join("\n");
    $("f-slow").value = f.slow_devices.map((u) => u.mac + "/" + u.sn + " " + u.latency).join("\n");
    for (const op of ["command", "message", "update_name"]) {
      const r = f.operation_error_rates[op];
      $("f-op-" + op).value = r ? String(r) : "";
    }
  }

  function lines(v) { return v.split(/[\n,]+/).map((s) => s.trim()).filter((s) => s !== ""); }

  function ref(s) {
    const i = s.indexOf("/");
    return i < 0 ? { mac: s, sn: "" } : { mac: s.substring(0, i).trim(), sn: s.substring(i + 1).trim() };
  }

  function readForm() {
    const f = {
      latency: $("f-latency").value.trim() || "0s",
      error_rate: 0,
      offline_gateways: lines($("f-offline").value),
      unreachable_devices: lines($("f-unreachable").value).map(ref),
      slow_devices: $("f-slow").value.split("\n").map((s) => s.trim()).filter((s) => s).map((s) => {
        const [r, latency] = s.split(/\s+/);
        return Object.assign(ref(r), { latency: latency || "" });
      }),
      operation_error_rates: {},
    };
    const num = (v) => (v.trim() === "" ? 0 : Number(v.trim()));
    f.error_rate = num($("f-error-rate").value);
    for (const op of ["command", "message", "update_name"]) {
      const v = $("f-op-" + op).value;
      if (v.trim() !== "") f.operation_error_rates[op] = num(v);
    }
    return f;
  }

  async function putFaults(f) {
    const r = await call("PUT", "/_sim/faults", f);
    $("faults-error").textContent = r.status === 200 ? "" : errorText(r);
    if (r.status === 200) { document.activeElement.blur(); refresh(); }
    return r;
  }

  $("faults-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    putFaults(readForm());
  });

  $("faults-clear").addEventListener("click", async () => {
    const r = await call("DELETE", "/_sim/faults");
    $("faults-error").textContent = r.status === 200 ? "" : errorText(r);
    document.activeElement.blur();
    refresh();
  });

  async function toggleUnreachable(mac, sn, on) {
    const r = await call("GET", "/_sim/faults");
    if (r.status !== 200) { $("faults-error").textContent = errorText(r); return; }
    const f = r.data;
    f.unreachable_devices = f.unreachable_devices.filter((u) => !(u.mac === mac && u.sn === sn));
    if (on) f.unreachable_devices.push({ mac, sn });
    putFaults(f);
  }

  start();
})();
