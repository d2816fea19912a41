// clusterforge floor page (docs/floor.md): the declared floor, fabric and nodes from floor.json, coloured by
// live.json (alerts by level, findings, each source's state). Every name from the inventory is set as text or as an
// attribute value (textContent, setAttribute): nothing read from the documents is ever parsed as markup.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const UH = 9;          // pixels a rack unit
const RACK_W = 118;    // pixels a rack
const HEAD = 14;       // the rack name above its units
const state = { doc: null, slots: new Map(), racks: new Map(), boxes: new Map(), live: null, lastLive: null,
                refreshMs: 5000, open: null };

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function banner(key, text, cls) {
  const box = document.getElementById("banners");
  let b = box.querySelector(`[data-source="${key}"]`);
  if (text === null) { if (b) b.remove(); return; }
  if (!b) { b = el("div", { "data-source": key }); box.appendChild(b); }
  b.className = cls || "";
  b.textContent = text;
}

async function getJson(path) {
  const r = await fetch(path, { cache: "no-store" });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

function drawFloor(doc) {
  const view = document.getElementById("view-floor");
  view.replaceChildren();
  for (const row of doc.rows) {
    const section = el("div", { class: "row", "data-row": row.name });
    section.appendChild(el("h2", {}, `row ${row.name}`));
    const racks = el("div", { class: "racks" });
    for (const rack of row.racks) {
      const h = HEAD + rack.u_height * UH + 4;
      const s = svg("svg", { class: "rack", width: RACK_W, height: h, "data-rack": rack.name,
                             viewBox: `0 0 ${RACK_W} ${h}` });
      s.appendChild(svg("rect", { class: "frame", x: 0.5, y: 0.5, width: RACK_W - 1, height: h - 1 }));
      const cooling = rack.cooling === "air" ? "" : ` ${rack.cooling}`;
      const leaks = rack.leak_sensors ? ` ${rack.leak_sensors} leak` : "";
      s.appendChild(svg("text", { x: 3, y: 10 }, `${rack.name}${cooling}${leaks}`));
      for (const slot of rack.slots) {
        const top = HEAD + (rack.u_height - (slot.u + slot.height - 1)) * UH;
        const g = svg("g", { "data-slot": slot.name, "data-u": slot.u, "data-rack": rack.name });
        const r = svg("rect", { class: `slot ${slot.kind}`, x: 14, y: top, width: RACK_W - 18,
                                height: slot.height * UH - 1, "data-name": slot.name, "data-kind": slot.kind });
        r.appendChild(svg("title", {}, `${slot.name} (${slot.role}) rack ${rack.name} U${slot.u}`));
        g.appendChild(r);
        g.appendChild(svg("text", { x: 2, y: top + 7 }, String(slot.u)));
        g.appendChild(svg("text", { x: 17, y: top + 7, "pointer-events": "none" }, slot.name));
        if (slot.kind !== "panel") g.addEventListener("click", () => openDevice(slot.kind, slot.name));
        s.appendChild(g);
        state.slots.set(slot.name, { rect: r, rack: rack.name });
      }
      state.racks.set(rack.name, s);
      racks.appendChild(s);
    }
    section.appendChild(racks);
    view.appendChild(section);
  }
}

function box(parent, name, sw, y, x) {
  const g = svg("g", { "data-switch": name });
  const r = svg("rect", { class: "box", x, y, width: 110, height: 26, "data-name": name });
  r.appendChild(svg("title", {}, `${name} (${sw.role}) rack ${sw.rack} U${sw.u}`));
  g.appendChild(r);
  g.appendChild(svg("text", { x: x + 4, y: y + 11, "pointer-events": "none" }, name));
  const plane = sw.plane === null || sw.plane === undefined ? "" : ` plane ${sw.plane}`;
  g.appendChild(svg("text", { x: x + 4, y: y + 22, "pointer-events": "none" },
                    `${sw.uplinks} up, ${sw.cabled} cabled${plane}`));
  g.addEventListener("click", () => openDevice("switch", name));
  parent.appendChild(g);
  state.boxes.set(name, r);
}

function tier(title, names, switches) {
  const wrap = el("div", { class: "unit", "data-tier": title });
  wrap.appendChild(el("h2", {}, title));
  const cols = Math.max(1, Math.min(names.length, 8));
  const h = Math.ceil(names.length / cols) * 32 + 4;
  const s = svg("svg", { width: cols * 116 + 4, height: h });
  names.forEach((n, i) => box(s, n, switches[n], 2 + Math.floor(i / cols) * 32, 2 + (i % cols) * 116));
  wrap.appendChild(s);
  return wrap;
}

function drawFabric(doc) {
  const view = document.getElementById("view-fabric");
  view.replaceChildren();
  const f = doc.fabric;
  if (f.cores.length) view.appendChild(tier("cores", f.cores, f.switches));
  if (f.spines.length) view.appendChild(tier("spines", f.spines, f.switches));
  const leaves = el("div", {});
  for (const u of f.units) leaves.appendChild(tier(u.name, u.leaves, f.switches));
  view.appendChild(leaves);
  if (f.planes.length) view.appendChild(el("p", {}, `rail planes: ${f.planes.join(", ")}`));
}

function cell(tr, text) { tr.appendChild(el("td", {}, text === null || text === undefined ? "" : text)); }

function cableCells(tr, c) {
  if (!c) { cell(tr, "no cable declared"); cell(tr, ""); cell(tr, ""); cell(tr, ""); return; }
  cell(tr, c.id);
  cell(tr, c.label === c.id ? "" : c.label);
  const trunk = c.trunk ? `${c.trunk} lane group ${c.lane_group ?? "?"}` +
    (c.panels.length ? ` (${c.panels.map(p => `${p.name} rack ${p.rack} U${p.u}`).join(" / ")})` : "") : "";
  cell(tr, trunk);
  const where = c.far_rack ? ` (rack ${c.far_rack} U${c.far_u})` : "";
  cell(tr, `${c.far}${where}`);
}

function marksOf(kind, name) {
  const live = state.live;
  return live && live[kind] && live[kind][name] ? live[kind][name] : null;
}

function drawMarks(parent, mark) {
  if (!mark) return;
  const list = el("ul", { class: "marks" });
  for (const a of mark.alerts) list.appendChild(el("li", { "data-alert": a.alertname },
    `level ${a.level} ${a.alertname}: ${a.summary}${a.repair ? " - " + a.repair : ""}`));
  for (const f of mark.findings) list.appendChild(el("li", { "data-finding": f.rule },
    `${f.source} ${f.rule} (${f.severity}) ${f.subject}: ${f.message}`));
  if (mark.drained) {
    const d = mark.drained;
    list.appendChild(el("li", { "data-drained": d.state || "out" },
      `out of service${d.state ? " (" + d.state + ")" : ""}: ${d.reason} (by ${d.user || "?"}, since ${d.since})`));
  }
  parent.appendChild(list);
}

async function openDevice(kind, name) {
  showView("node");
  const view = document.getElementById("view-node");
  view.replaceChildren(el("p", { class: "hint" }, `loading ${name} ...`));
  const path = kind === "switch" ? `switches/${encodeURIComponent(name)}.json` : `nodes/${encodeURIComponent(name)}.json`;
  let d;
  try {
    d = await getJson(path);
  } catch (e) {
    view.replaceChildren(el("p", { class: "hint" }, `${name}: ${e.message}`));
    return;
  }
  state.open = { kind, name };
  if (location.hash !== `#${kind}=${name}`) history.replaceState(null, "", `#${kind}=${encodeURIComponent(name)}`);
  view.replaceChildren();
  view.appendChild(el("h2", { "data-device": d.name }, `${d.name} (${d.role}) rack ${d.rack} U${d.u}`));
  drawMarks(view, marksOf(kind === "switch" ? "switches" : "hosts", d.name));
  const table = el("table", { "data-cables": d.name });
  const head = el("tr", {});
  const cols = kind === "switch" ? ["port"] : ["HCA", "port", "rate"];
  for (const h of [...cols, "cable", "label", "trunk", "far end"]) head.appendChild(el("th", {}, h));
  table.appendChild(head);
  if (kind === "switch") {
    for (const p of d.ports) {
      if (!p.cable) continue;
      const tr = el("tr", { "data-port": p.port, "data-cable": p.cable.id });
      cell(tr, p.port);
      cableCells(tr, p.cable);
      table.appendChild(tr);
    }
  } else {
    if (d.gpus) view.appendChild(el("p", {}, `${d.gpus.count} x ${d.gpus.model}, ${d.os}`));
    for (const h of d.hcas) for (const p of h.ports) {
      const tr = el("tr", { "data-port": `${h.name}/${p.port}`, "data-cable": p.cable ? p.cable.id : "" });
      cell(tr, `${h.name} (${h.model}, rail ${h.rail ?? "-"})`);
      cell(tr, p.port);
      cell(tr, p.rate);
      cableCells(tr, p.cable);
      table.appendChild(tr);
    }
  }
  view.appendChild(table);
}

function showView(name) {
  for (const v of ["floor", "fabric", "node"]) {
    document.getElementById(`view-${v}`).hidden = v !== name;
    document.getElementById(`tab-${v}`).classList.toggle("active", v === name);
  }
}

function paint(live) {
  const level = new Map();
  for (const [name, s] of state.slots) {
    const m = (s.rect.dataset.kind === "switch" ? live.switches : live.hosts)[name];
    s.rect.classList.remove("level1", "level2", "level3", "finding", "drained");
    if (m && m.level > 0) s.rect.classList.add(`level${Math.min(m.level, 3)}`);
    if (m && m.findings.length) s.rect.classList.add("finding");
    if (m && m.drained) s.rect.classList.add("drained");
    if (m && m.level > (level.get(s.rack) || 0)) level.set(s.rack, m.level);
  }
  for (const [name, r] of state.racks) {
    r.classList.remove("level1", "level2", "level3");
    const n = level.get(name) || 0;
    if (n > 0) r.classList.add(`level${Math.min(n, 3)}`);
  }
  for (const [name, r] of state.boxes) {
    const m = live.switches[name];
    r.classList.remove("level1", "level2", "level3", "finding");
    if (m && m.level > 0) r.classList.add(`level${Math.min(m.level, 3)}`);
    if (m && m.findings.length) r.classList.add("finding");
  }
  for (const [key, s] of Object.entries(live.sources)) {
    if (s.state === "ok") { banner(key, null); continue; }
    const seen = s.read_at ? `last seen at ${s.read_at}` : "never read";
    const why = s.error ? `: ${s.error}` : "";
    const what = { stale: "unreachable", missing: "unreachable", bad: "unreadable" }[s.state] || s.state;
    banner(key, `${key} (${s.where}) ${what}${why}; ${seen}`, s.state === "stale" ? "stale" : "");
  }
}

async function refresh() {
  try {
    const live = await getJson("live.json");
    state.live = live;
    state.lastLive = live.now;
    banner("server", null);
    paint(live);
    document.getElementById("updated").textContent = `live at ${live.now}`;
  } catch (e) {
    banner("server", `the page's server is unreachable (${e.message}); ` +
           (state.lastLive ? `last seen at ${state.lastLive}` : "never read"), "");
  }
}

async function main() {
  document.querySelectorAll("nav button").forEach(b => b.addEventListener("click", () => showView(b.dataset.view)));
  let doc;
  try {
    doc = await getJson("floor.json");
    if (doc.schema !== 1) throw new Error(`floor.json schema ${doc.schema}: this page reads schema 1`);
  } catch (e) {
    banner("floor", `the floor could not be read: ${e.message}`);
    return;
  }
  state.doc = doc;
  state.refreshMs = (doc.refresh_s || 5) * 1000;
  document.getElementById("title").textContent = `${doc.site.name}: ${doc.environment}` +
    (doc.site.location ? ` (${doc.site.location})` : "");
  const t0 = performance.now();
  drawFloor(doc);
  drawFabric(doc);
  document.body.dataset.drawMs = String(Math.round(performance.now() - t0));
  document.body.dataset.ready = "1";
  const m = /^#(node|switch)=(.+)$/.exec(location.hash);
  if (m) openDevice(m[1], decodeURIComponent(m[2]));
  await refresh();
  setInterval(refresh, state.refreshMs);
}

main();
