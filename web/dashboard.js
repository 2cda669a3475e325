// The daqflow dashboard (docs/monitoring.md). Every second it asks each context of the cluster
// for a snapshot (its applications' states, metrics and endpoint counters) through this
// executive's /api/v1/contexts/{name}/snapshot, keeps the last minutes of every metric, and
// updates the view in place. Commands and parameter changes go the same way.
'use strict';

const POLL_MS = 1000;
const KEEP_S = 600; // how far back the live plots reach
const STALE_MS = 3000; // a context that has not answered for this long is shown as stale

const dash = {
  contexts: [], // [{name, host, control_port, applications: [id]}]
  self: null, // the context serving this page
  snapshots: new Map(), // context name -> {snap, at (ms), error}
  series: new Map(), // "app/metric" -> {kind, unit, help, t: [s], v: [], rate: []}
  plots: new Map(), // element id -> uPlot
  view: null, // {name, arg, update()}
  logs: {key: '', since: 0, lines: []},
  history: {key: '', since: 0, t: [], v: []},
};
window.daqflow = dash; // for the browser test and the curious

// ---------------------------------------------------------------------------------------------
// The API

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body) {
  const headers = {};
  const token = sessionStorage.getItem('daqflow-token');
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
  });
  let data = null;
  try {
    data = await res.json();
  } catch (e) {
    data = null;
  }
  if (!res.ok) {
    throw new ApiError(res.status, data && data.error ? data.error : `HTTP ${res.status}`);
  }
  return data;
}

const contextPath = (context, rest) =>
  `/api/v1/contexts/${encodeURIComponent(context)}/${rest}`;

// ---------------------------------------------------------------------------------------------
// Polling and the metric series

// The endpoint counters become metrics of the application, "endpoint.<name>".
const ENDPOINT_GAUGES = new Set(['peers_connected', 'recv_pool_in_use', 'recv_pool_high_water']);

// ... and its traffic with each peer, "peer.<id>.<name>" (counters).
function metricsOf(app) {
  const out = app.metrics.slice();
  if (app.endpoint) {
    for (const [name, value] of Object.entries(app.endpoint)) {
      if (typeof value !== 'number') continue;
      const unit = name.startsWith('bytes') ? 'bytes' : '';
      const kind = ENDPOINT_GAUGES.has(name) ? 'gauge' : 'counter';
      out.push({name: 'endpoint.' + name, kind, unit, value, help: `endpoint (${app.endpoint.transport})`});
    }
    for (const p of app.endpoint.peers || []) {
      for (const [name, value] of Object.entries(p)) {
        if (typeof value !== 'number') continue;
        out.push({name: `peer.${p.peer}.${name}`, kind: 'counter', unit: name.startsWith('bytes') ? 'bytes' : '',
          value, help: `with ${p.peer}`});
      }
    }
  }
  return out;
}

function record(snap) {
  const t = snap.time_ms / 1000;
  for (const app of snap.applications) {
    for (const m of metricsOf(app)) {
      const key = app.id + '/' + m.name;
      let s = dash.series.get(key);
      if (!s) {
        s = {kind: m.kind, unit: m.unit, help: m.help, t: [], v: [], rate: []};
        dash.series.set(key, s);
      }
      const n = s.t.length;
      if (n > 0 && t <= s.t[n - 1]) continue; // the same snapshot twice
      let rate = null;
      if (n > 0) {
        const dv = m.value - s.v[n - 1];
        // A counter that went back was reset (a new Configure): no rate for that interval.
        rate = dv >= 0 ? dv / (t - s.t[n - 1]) : null;
      }
      s.t.push(t);
      s.v.push(m.value);
      s.rate.push(m.kind === 'counter' ? rate : m.value);
      while (s.t.length > 1 && s.t[0] < t - KEEP_S) {
        s.t.shift();
        s.v.shift();
        s.rate.shift();
      }
    }
  }
}

// The latest value and rate of a metric (undefined when not seen).
function latest(app, metric) {
  const s = dash.series.get(app + '/' + metric);
  if (!s || s.t.length === 0) return undefined;
  const n = s.t.length;
  return {value: s.v[n - 1], rate: s.rate[n - 1], kind: s.kind, unit: s.unit};
}

// Asks for every context's snapshot (this executive asks the others in parallel; one that does
// not answer is reported with why, and its heartbeat age grows).
async function pollOnce() {
  try {
    const all = await api('GET', '/api/v1/snapshots');
    for (const c of all.contexts) {
      const entry = dash.snapshots.get(c.name) || {snap: null, at: 0, error: null};
      if (c.snapshot) {
        entry.snap = c.snapshot;
        entry.at = Date.now();
        entry.error = null;
        record(c.snapshot);
      } else {
        entry.error = c.error;
      }
      dash.snapshots.set(c.name, entry);
    }
    notice('');
  } catch (e) {
    notice('this executive did not answer: ' + e.message);
  }
  document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  updateRunStrip();
  updateAlarms();
  if (dash.view) {
    try {
      await dash.view.update();
    } catch (e) {
      notice('the view could not be updated: ' + e.message);
    }
  }
  updateButtons();
}

// ---------------------------------------------------------------------------------------------
// The run: the strip under the header (number, state, time since Enable, totals) and the alarms,
// on every view.

// The state of the whole run: the applications' one state, or Mixed.
function runState(apps) {
  const states = new Set(apps.filter((a) => a.snap).map((a) => a.snap.state));
  if (states.size === 0) return null;
  return states.size === 1 ? [...states][0] : 'Mixed';
}

function metricValue(id, metric) {
  const l = latest(id, metric);
  return l ? l.value : undefined;
}

function sumOf(apps, metric) {
  let total;
  for (const a of apps) {
    const v = metricValue(a.id, metric);
    if (v !== undefined) total = (total || 0) + v;
  }
  return total;
}

function updateRunStrip() {
  const apps = applications();
  const numbered = [...dash.snapshots.values()].find((e) => e.snap && e.snap.run_number !== undefined);
  document.getElementById('run-number').textContent = numbered ? `run ${numbered.snap.run_number}` : 'run –';
  const state = runState(apps);
  setState(document.getElementById('run-state'), state);
  const enabled = document.getElementById('run-enabled');
  if (state === 'Enabled') {
    const since = Math.max(...apps.map((a) => a.snap.state_since_ms || 0));
    const s = Math.max(0, (Date.now() - since) / 1000);
    enabled.textContent = `enabled for ${s < 120 ? s.toFixed(0) + ' s' : (s / 60).toFixed(1) + ' min'}`;
  } else {
    enabled.textContent = '';
  }
  // Built: the EVM's count where there is one (every event once), else what the builders built.
  const evm = apps.filter((a) => a.snap && a.snap.type === 'evm');
  const builders = apps.filter((a) => a.snap && (a.snap.type === 'bu' || a.snap.type === 'ts_builder'));
  const built = evm.length ? sumOf(evm, 'events_built') : sumOf(builders, 'events_built');
  const bytes = evm.length ? sumOf(evm, 'bytes_built') : sumOf(builders, 'bytes_built');
  document.getElementById('run-built').textContent = fmt(built);
  document.getElementById('run-bytes').textContent = bytes === undefined ? '–' : fmt(bytes) + 'B';
  document.getElementById('run-written').textContent = fmt(sumOf(apps, 'events_written'));
}

// What needs an operator, worst first: an application failed, a context silent or slow, builders
// lost, an output that cannot write all it gets (its cap), a readout throttled (dead time).
const THROTTLE_ALARM = 0.5; // of the time

function alarmsNow() {
  const out = [];
  const now = Date.now();
  const apps = applications();
  for (const a of apps) {
    if (a.snap && a.snap.state === 'Failed') out.push(['error', `${a.id} failed: ${a.snap.reason || ''}`]);
  }
  for (const c of dash.contexts) {
    const e = dash.snapshots.get(c.name);
    if (!e || !e.snap) {
      out.push(['error', `context ${c.name} does not answer${e && e.error ? ': ' + e.error : ''}`]);
    } else if (e.error || now - e.at > STALE_MS) {
      out.push(['error', `context ${c.name} is silent: last answer ${((now - e.at) / 1000).toFixed(0)} s ago` +
        (e.error ? ` (${e.error})` : '')]);
    }
  }
  for (const a of apps.filter((x) => x.snap && x.snap.type === 'evm')) {
    const alive = metricValue(a.id, 'bus_alive');
    const bus = apps.filter((x) => x.snap && x.snap.type === 'bu').length;
    if (alive !== undefined && bus > 0 && alive < bus) out.push(['error', `builders lost: ${alive} of ${bus} BUs alive at ${a.id}`]);
  }
  for (const a of apps) {
    const notWritten = metricValue(a.id, 'events_not_written');
    if (notWritten > 0) {
      out.push(['error', `${a.id}: output held at its cap, ${fmt(notWritten)} events built and not written`]);
    }
  }
  for (const a of apps) {
    const l = latest(a.id, 'throttled_ns');
    if (l && l.rate !== null && l.rate / 1e9 >= THROTTLE_ALARM) {
      out.push(['warning', `${a.id}: readout throttled ${(l.rate / 1e7).toFixed(0)} % of the time (dead time)`]);
    }
  }
  return out;
}

function updateAlarms() {
  const box = document.getElementById('alarms');
  const alarms = alarmsNow();
  box.replaceChildren(...alarms.map(([level, text]) => el('div', {class: level, text})));
  box.hidden = alarms.length === 0;
}

// A command button is greyed where no application it would reach can take the command.
const ALLOWED = {Halted: ['Configure'], Ready: ['Enable', 'Halt'], Enabled: ['Suspend', 'Halt'],
  Suspended: ['Resume', 'Halt'], Failed: ['Reset']};

function updateButtons() {
  const apps = applications();
  for (const b of document.querySelectorAll('button[data-cmd]')) {
    const reach = b.dataset.app ? apps.filter((a) => a.id === b.dataset.app)
      : b.dataset.context ? apps.filter((a) => a.context === b.dataset.context) : apps;
    b.disabled = !reach.some((a) => a.snap && (ALLOWED[a.snap.state] || []).includes(b.dataset.cmd));
  }
}

async function pollLoop() {
  const started = Date.now();
  await pollOnce();
  setTimeout(pollLoop, Math.max(50, POLL_MS - (Date.now() - started)));
}

// Every application of the cluster with its context and latest state.
function applications() {
  const out = [];
  for (const c of dash.contexts) {
    const entry = dash.snapshots.get(c.name);
    const byId = new Map();
    if (entry && entry.snap) for (const a of entry.snap.applications) byId.set(a.id, a);
    for (const id of c.applications) out.push({context: c.name, id, snap: byId.get(id) || null});
  }
  return out;
}

function contextOf(appId) {
  const c = dash.contexts.find((x) => x.applications.includes(appId));
  return c ? c.name : null;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function fmt(x, digits = 3) {
  if (x === undefined || x === null || Number.isNaN(x)) return '–';
  const a = Math.abs(x);
  if (a === 0) return '0';
  const units = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  for (const [scale, prefix] of units) if (a >= scale) return (x / scale).toPrecision(digits) + ' ' + prefix;
  return Number.isInteger(x) ? String(x) : x.toPrecision(digits);
}

const fmtBytesRate = (r) => (r === undefined || r === null ? '–' : (r / 1e6).toFixed(1));

function stateBadge(state) {
  return el('span', {class: 'state ' + (state || 'unknown'), text: state || 'unknown'});
}

function setState(span, state) {
  span.className = 'state ' + (state || 'unknown');
  span.textContent = state || 'unknown';
}

function notice(text) {
  const n = document.getElementById('notice');
  n.textContent = text;
  n.hidden = !text;
}

function showMessage(span, text, ok) {
  span.textContent = text;
  span.className = 'message ' + (ok ? 'ok' : 'error');
}

const COMMANDS = ['Configure', 'Enable', 'Suspend', 'Resume', 'Halt', 'Reset'];

// Halt ends the data taking and Reset clears a failure's reason: asked for twice.
const CONFIRM = new Set(['Halt', 'Reset']);

function commandButtons(onCommand, attrs = {}, what = 'every application of the cluster') {
  return el('span', {class: 'buttons'},
    ...COMMANDS.map((cmd) => el('button', {...attrs, 'data-cmd': cmd, text: cmd, onclick: () => {
      if (CONFIRM.has(cmd) && !window.confirm(`${cmd} ${what}?`)) return;
      onCommand(cmd);
    }})));
}

// A live plot of one or more series: data = [[t...], [y...], ...].
function plot(id, title, labels, width = 360, height = 140) {
  const box = el('div', {class: 'plot', id});
  box.append(el('div', {class: 'title', text: title}));
  const colors = ['#1e88e5', '#43a047', '#e53935', '#8e24aa', '#fb8c00', '#00897b'];
  const opts = {
    width,
    height,
    legend: {show: labels.length > 1},
    cursor: {show: true},
    scales: {x: {time: true}},
    series: [{}, ...labels.map((label, i) => ({label, stroke: colors[i % colors.length], width: 1.5}))],
    axes: [{}, {size: 60, values: (u, ticks) => ticks.map((v) => fmt(v, 2))}],
  };
  const u = new uPlot(opts, [[], ...labels.map(() => [])], box);
  dash.plots.set(id, u);
  return box;
}

function setPlot(id, data) {
  const u = dash.plots.get(id);
  if (u) u.setData(data);
}

// ---------------------------------------------------------------------------------------------
// Commands

const TARGET = {Configure: 'Ready', Enable: 'Enabled', Suspend: 'Suspended', Resume: 'Enabled', Halt: 'Halted', Reset: 'Halted'};
// As `daqflow run` does: enabling goes up the types' ranks (receivers before senders), halting
// and suspending down; Configure and Reset go to every context at once.
const ORDER = {Configure: 0, Reset: 0, Enable: 1, Resume: 1, Halt: -1, Suspend: -1};

async function contextCommand(context, cmd, message) {
  try {
    await api('POST', contextPath(context, 'fsm/' + cmd));
    showMessage(message, `${cmd} sent to ${context}`, true);
  } catch (e) {
    showMessage(message, `${cmd} refused by ${context}: ${e.message}`, false);
  }
}

async function appCommand(appId, cmd, message) {
  try {
    const r = await api('POST', contextPath(contextOf(appId), `apps/${encodeURIComponent(appId)}/fsm/${cmd}`));
    showMessage(message, `${cmd}: ${r.state}`, true);
  } catch (e) {
    showMessage(message, `${cmd} refused: ${e.message}`, false);
  }
}

async function waitForState(apps, target, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(apps.map(async (a) => {
      const r = await api('GET', contextPath(a.context, 'apps/' + encodeURIComponent(a.id)));
      return [a.id, r.state, r.reason];
    }));
    const failed = states.find(([, s]) => s === 'Failed');
    if (failed) throw new Error(`${failed[0]} failed: ${failed[2]}`);
    if (states.every(([, s]) => s === target)) return;
    if (Date.now() > deadline) {
      throw new Error('timed out waiting for ' + states.filter(([, s]) => s !== target).map(([id, s]) => `${id} (${s})`).join(', '));
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function clusterCommand(cmd, message) {
  const target = TARGET[cmd];
  try {
    if (ORDER[cmd] === 0) {
      showMessage(message, `${cmd}: every context…`, true);
      await Promise.all(dash.contexts.map((c) => api('POST', contextPath(c.name, 'fsm/' + cmd))));
      await waitForState(applications(), target, 120000);
    } else {
      const ranks = new Map();
      for (const a of applications()) {
        const rank = a.snap ? a.snap.rank : 0;
        if (!ranks.has(rank)) ranks.set(rank, []);
        ranks.get(rank).push(a);
      }
      const order = [...ranks.keys()].sort((x, y) => (x - y) * ORDER[cmd]);
      for (const rank of order) {
        const group = ranks.get(rank).filter((a) => !a.snap || a.snap.state !== target);
        showMessage(message, `${cmd}: ${group.map((a) => a.id).join(', ') || 'nothing'}…`, true);
        await Promise.all(group.map((a) =>
          api('POST', contextPath(a.context, `apps/${encodeURIComponent(a.id)}/fsm/${cmd}`))));
        await waitForState(group, target, 120000);
      }
    }
    showMessage(message, `${cmd}: every application ${target}`, true);
  } catch (e) {
    showMessage(message, `${cmd}: ${e.message}`, false);
  }
}

// ---------------------------------------------------------------------------------------------
// Views. Each builds its elements once and updates them in place every poll.

const MAIN_RATES = [
  ['messages_in', 'in msg/s', fmt],
  ['bytes_in', 'in MB/s', fmtBytesRate],
  ['messages_out', 'out msg/s', fmt],
  ['bytes_out', 'out MB/s', fmtBytesRate],
  ['events_built', 'events/s', fmt],
];

function clusterView(root) {
  const message = el('span', {class: 'message', id: 'cluster-message'});
  root.append(el('div', {id: 'cluster-buttons'}, el('strong', {text: 'Cluster: '}),
    commandButtons((cmd) => clusterCommand(cmd, message)), message));
  const rows = new Map();
  const heads = new Map();
  for (const c of dash.contexts) {
    const state = stateBadge(null);
    const heartbeat = el('span', {class: 'heartbeat'});
    const cmsg = el('span', {class: 'message'});
    heads.set(c.name, {state, heartbeat});
    root.append(el('h2', {'data-context': c.name}, `context ${c.name} `, state, ' ',
      el('small', {text: `${c.host}:${c.control_port} `}), heartbeat, ' ',
      commandButtons((cmd) => contextCommand(c.name, cmd, cmsg), {'data-context': c.name},
        `the applications of context ${c.name}`), cmsg));
    const table = el('table', {},
      el('tr', {}, ...['application', 'type', 'state', 'since', ...MAIN_RATES.map((r) => r[1])].map((h) => el('th', {text: h}))));
    for (const id of c.applications) {
      const cells = {state: stateBadge(null), reason: el('div', {class: 'reason'}), type: el('td'), since: el('td'),
        rates: MAIN_RATES.map(() => el('td', {class: 'num'}))};
      rows.set(id, cells);
      table.append(el('tr', {'data-app': id},
        el('td', {}, el('a', {href: '#/app/' + encodeURIComponent(id), text: id})), cells.type,
        el('td', {}, cells.state, cells.reason), cells.since, ...cells.rates));
    }
    root.append(table);
  }
  return () => {
    const now = Date.now();
    for (const c of dash.contexts) {
      const entry = dash.snapshots.get(c.name);
      const head = heads.get(c.name);
      if (!entry || !entry.snap) {
        setState(head.state, null);
        head.heartbeat.textContent = entry && entry.error ? `no answer: ${entry.error}` : 'no answer yet';
        head.heartbeat.className = 'heartbeat stale';
        continue;
      }
      setState(head.state, entry.snap.state);
      const age = (now - entry.at) / 1000;
      head.heartbeat.textContent = entry.error ? `last answer ${age.toFixed(1)} s ago: ${entry.error}` : `answered ${age.toFixed(1)} s ago`;
      head.heartbeat.className = 'heartbeat' + (now - entry.at > STALE_MS ? ' stale' : '');
    }
    for (const a of applications()) {
      const cells = rows.get(a.id);
      if (!cells || !a.snap) continue;
      setState(cells.state, a.snap.state);
      cells.reason.textContent = a.snap.reason || '';
      cells.type.textContent = a.snap.type;
      cells.since.textContent = a.snap.state_since_ms ? new Date(a.snap.state_since_ms).toLocaleTimeString() : '';
      MAIN_RATES.forEach(([metric, , format], i) => {
        const l = latest(a.id, metric);
        cells.rates[i].textContent = l ? format(l.rate) : '';
      });
    }
  };
}

async function appView(root, appId) {
  const context = contextOf(appId);
  if (!context) {
    root.append(el('p', {text: `no application '${appId}' in this cluster`}));
    return () => {};
  }
  const path = contextPath(context, 'apps/' + encodeURIComponent(appId));
  const state = stateBadge(null);
  const reason = el('span', {class: 'reason', id: 'app-reason'});
  state.id = 'app-state';
  const message = el('span', {class: 'message', id: 'app-message'});
  root.append(el('h2', {}, `${appId} `, el('small', {id: 'app-type'}), ` in context ${context} `, state, ' ', reason));
  root.append(el('div', {id: 'app-buttons'},
    commandButtons((cmd) => appCommand(appId, cmd, message), {'data-app': appId}, appId), message));

  // Parameters: the values as JSON, editable while the state allows (the API says when not).
  const paramsTable = el('table', {id: 'params'});
  const paramsMessage = el('span', {class: 'message', id: 'params-message'});
  const inputs = new Map();
  const fillParams = (params) => {
    paramsTable.replaceChildren(el('tr', {}, el('th', {text: 'parameter'}), el('th', {text: 'value'})));
    inputs.clear();
    for (const [name, value] of Object.entries(params)) {
      const input = el('input', {'data-param': name, size: 40, value: JSON.stringify(value)});
      input.dataset.original = input.value;
      inputs.set(name, input);
      paramsTable.append(el('tr', {}, el('td', {text: name}), el('td', {}, input)));
    }
  };
  const apply = async () => {
    const changes = {};
    for (const [name, input] of inputs) {
      if (input.value === input.dataset.original) continue;
      try {
        changes[name] = JSON.parse(input.value);
      } catch (e) {
        changes[name] = input.value; // a bare word is a string
      }
    }
    if (Object.keys(changes).length === 0) {
      showMessage(paramsMessage, 'nothing changed', true);
      return;
    }
    try {
      const r = await api('PUT', path + '/params', changes);
      fillParams(r.params);
      showMessage(paramsMessage, 'changed: ' + Object.keys(changes).join(', '), true);
    } catch (e) {
      showMessage(paramsMessage, `refused (${e.status}): ${e.message}`, false);
    }
  };
  root.append(el('h2', {text: 'Parameters'}), paramsTable,
    el('div', {class: 'editable'}, el('button', {id: 'params-apply', text: 'Apply', onclick: apply}), paramsMessage));
  const detail = await api('GET', path);
  document.getElementById('app-type').textContent = `(${detail.type})`;
  fillParams(detail.params);

  // Metrics: every one with its value, rate and a live plot (rate of counters, value of gauges).
  const metricsTable = el('table', {id: 'metrics'});
  const plots = el('div', {class: 'plots'});
  root.append(el('h2', {text: 'Metrics'}), metricsTable, plots);
  const known = new Map();
  return () => {
    const entry = dash.snapshots.get(context);
    const snap = entry && entry.snap ? entry.snap.applications.find((a) => a.id === appId) : null;
    if (!snap) return;
    setState(state, snap.state);
    reason.textContent = snap.reason || '';
    for (const m of metricsOf(snap)) {
      if (m.name.startsWith('peer.')) continue; // per peer: the transports view
      let row = known.get(m.name);
      if (!row) {
        row = {value: el('td', {class: 'num'}), rate: el('td', {class: 'num'}), plotId: 'plot-' + m.name.replace(/[^a-zA-Z0-9_-]/g, '_')};
        known.set(m.name, row);
        if (metricsTable.childElementCount === 0) {
          metricsTable.append(el('tr', {}, ...['metric', 'kind', 'value', 'rate /s', 'unit', 'meaning'].map((h) => el('th', {text: h}))));
        }
        metricsTable.append(el('tr', {'data-metric': m.name}, el('td', {text: m.name}), el('td', {text: m.kind}),
          row.value, row.rate, el('td', {text: m.unit}), el('td', {text: m.help})));
        plots.append(plot(row.plotId, m.kind === 'counter' ? `${m.name} per second` : m.name, [m.name], 300, 110));
      }
      const s = dash.series.get(appId + '/' + m.name);
      row.value.textContent = fmt(m.value, 6);
      row.value.title = String(m.value);
      row.rate.textContent = m.kind === 'counter' && s ? fmt(s.rate[s.rate.length - 1]) : '';
      if (s) setPlot(row.plotId, [s.t, s.rate]);
    }
  };
}

function sumRate(apps, metric) {
  let total = 0;
  for (const a of apps) {
    const l = latest(a.id, metric);
    if (l && l.rate !== null) total += l.rate;
  }
  return total;
}

function evbView(root) {
  const apps = applications();
  const evm = apps.find((a) => a.snap && a.snap.type === 'evm');
  // Every readout: the RUs and the EVM's own (its FEDs, the trigger), whose throttled share is
  // the run's dead time.
  const readouts = apps.filter((a) => a.snap && (a.snap.type === 'ru' || a.snap.type === 'evm'));
  const bus = apps.filter((a) => a.snap && a.snap.type === 'bu');
  if (!evm) {
    root.append(el('p', {text: 'no event builder (EVM) in this cluster, or its context has not answered yet'}));
    return () => {};
  }
  const figures = [
    ['evb-rate', 'events built /s'], ['evb-throughput', 'built MB/s'], ['evb-in-flight', 'events in flight'],
    ['evb-reassigned', 'events re-assigned'], ['evb-incomplete', 'events incomplete'], ['evb-lost', 'events lost'],
    ['evb-in-doubt', 'events in doubt'], ['evb-bus-alive', 'BUs alive'],
  ];
  const cells = new Map();
  root.append(el('h2', {text: `Event builder (EVM ${evm.id})`}),
    el('table', {}, el('tr', {}, ...figures.map(([, h]) => el('th', {text: h}))),
      el('tr', {}, ...figures.map(([id]) => {
        const td = el('td', {class: 'num', id});
        cells.set(id, td);
        return td;
      }))));
  root.append(el('div', {class: 'plots'},
    plot('evb-rate-plot', 'events built per second', ['events/s'], 520, 180),
    plot('evb-throughput-plot', 'built MB/s', ['MB/s'], 520, 180)));

  const buCols = ['BU', 'state', 'events built', 'events/s', 'share', 'incomplete', 'fenced', 'not written', 'blocks open', 'recv pool', 'pool high water'];
  const buTable = el('table', {id: 'evb-bus'}, el('tr', {}, ...buCols.map((h) => el('th', {text: h}))));
  const buRows = new Map(bus.map((b) => {
    const tds = buCols.map((_, i) => el('td', {class: i > 1 ? 'num' : ''}));
    buTable.append(el('tr', {'data-app': b.id}, ...tds));
    return [b.id, tds];
  }));
  const ruCols = ['readout', 'state', 'events/s', 'out MB/s', 'events held', 'blocks retained', 'dead time', 'blocks resent', 'recv pool', 'pool high water'];
  const ruTable = el('table', {id: 'evb-rus'}, el('tr', {}, ...ruCols.map((h) => el('th', {text: h}))));
  const ruRows = new Map(readouts.map((r) => {
    const tds = ruCols.map((_, i) => el('td', {class: i > 1 ? 'num' : ''}));
    ruTable.append(el('tr', {'data-app': r.id}, ...tds));
    return [r.id, tds];
  }));
  root.append(el('h2', {text: 'Builder units (balance)'}), buTable,
    el('h2', {text: 'Readouts and dead time (share of the time each waited for free memory)'}), ruTable);

  const value = (id, metric) => {
    const l = latest(id, metric);
    return l ? l.value : undefined;
  };
  const rate = (id, metric) => {
    const l = latest(id, metric);
    return l ? l.rate : undefined;
  };
  return () => {
    cells.get('evb-rate').textContent = fmt(rate(evm.id, 'events_built'));
    cells.get('evb-throughput').textContent = fmtBytesRate(rate(evm.id, 'bytes_built'));
    cells.get('evb-in-flight').textContent = fmt(value(evm.id, 'events_in_flight'));
    cells.get('evb-reassigned').textContent = fmt(value(evm.id, 'events_reassigned'));
    cells.get('evb-incomplete').textContent = fmt(value(evm.id, 'events_incomplete'));
    cells.get('evb-lost').textContent = fmt(value(evm.id, 'events_lost'));
    cells.get('evb-in-doubt').textContent = fmt(value(evm.id, 'events_in_doubt'));
    cells.get('evb-bus-alive').textContent = fmt(value(evm.id, 'bus_alive'));
    const s = dash.series.get(evm.id + '/events_built');
    if (s) setPlot('evb-rate-plot', [s.t, s.rate]);
    const b = dash.series.get(evm.id + '/bytes_built');
    if (b) setPlot('evb-throughput-plot', [b.t, b.rate.map((r) => (r === null ? null : r / 1e6))]);

    const all = applications();
    const snapOf = (id) => (all.find((a) => a.id === id) || {}).snap;
    const total = sumRate(bus, 'events_built');
    for (const [id, tds] of buRows) {
      const r = rate(id, 'events_built');
      const figures = [id, (snapOf(id) || {}).state, fmt(value(id, 'events_built')), fmt(r),
        total > 0 && r !== undefined && r !== null ? (100 * r / total).toFixed(0) + ' %' : '–',
        fmt(value(id, 'events_incomplete')), fmt(value(id, 'events_fenced')), fmt(value(id, 'events_not_written')),
        fmt(value(id, 'blocks_open')),
        fmt(value(id, 'endpoint.recv_pool_in_use')), fmt(value(id, 'endpoint.recv_pool_high_water'))];
      figures.forEach((f, i) => { tds[i].textContent = f === undefined ? '–' : f; });
      // Built and granted, yet not on disk (the output's cap): flagged until the run ends.
      tds[buCols.indexOf('not written')].classList.toggle('alarm', (value(id, 'events_not_written') || 0) > 0);
    }
    for (const [id, tds] of ruRows) {
      const throttled = rate(id, 'throttled_ns');
      const figures = [id, (snapOf(id) || {}).state, fmt(rate(id, 'events_produced')), fmtBytesRate(rate(id, 'bytes_out')),
        fmt(value(id, 'events_held')), fmt(value(id, 'blocks_retained')),
        throttled === undefined || throttled === null ? '–' : (throttled / 1e7).toFixed(1) + ' %',
        fmt(value(id, 'blocks_resent')), fmt(value(id, 'endpoint.recv_pool_in_use')),
        fmt(value(id, 'endpoint.recv_pool_high_water'))];
      figures.forEach((f, i) => { tds[i].textContent = f === undefined ? '–' : f; });
    }
  };
}

function transportsView(root) {
  const cols = ['context', 'application', 'transport', 'peers', 'in msg/s', 'in MB/s', 'out msg/s', 'out MB/s',
    'back-pressured /s', 'recv stalls /s', 'rejected', 'peer errors', 'recv pool', 'pool high water'];
  const table = el('table', {id: 'transports'}, el('tr', {}, ...cols.map((h) => el('th', {text: h}))));
  const peerCols = ['application', 'peer', 'in msg/s', 'in MB/s', 'out msg/s', 'out MB/s', 'back-pressured /s',
    'messages in', 'messages out'];
  const peerTable = el('table', {id: 'transport-peers'}, el('tr', {}, ...peerCols.map((h) => el('th', {text: h}))));
  const plots = el('div', {class: 'plots'});
  root.append(el('h2', {text: 'Endpoints'}), table, el('h2', {text: 'Per peer'}), peerTable,
    el('h2', {text: 'Bytes in and out per second'}), plots);
  const rows = new Map();
  const peerRows = new Map();
  return () => {
    for (const a of applications()) {
      if (!a.snap || !a.snap.endpoint) continue;
      for (const p of a.snap.endpoint.peers || []) {
        const key = `${a.id}/${p.peer}`;
        let tds = peerRows.get(key);
        if (!tds) {
          tds = peerCols.map((_, i) => el('td', {class: i > 1 ? 'num' : ''}));
          peerRows.set(key, tds);
          peerTable.append(el('tr', {'data-app': a.id, 'data-peer': p.peer}, ...tds));
        }
        const r = (name) => {
          const l = latest(a.id, `peer.${p.peer}.${name}`);
          return l ? l.rate : undefined;
        };
        const figures = [a.id, p.peer, fmt(r('messages_received')), fmtBytesRate(r('bytes_received')),
          fmt(r('messages_sent')), fmtBytesRate(r('bytes_sent')), fmt(r('back_pressured')),
          fmt(p.messages_received), fmt(p.messages_sent)];
        figures.forEach((f, i) => { tds[i].textContent = f; });
      }
    }
    for (const a of applications()) {
      if (!a.snap || !a.snap.endpoint) continue;
      let tds = rows.get(a.id);
      if (!tds) {
        tds = cols.map((_, i) => el('td', {class: i > 2 ? 'num' : ''}));
        rows.set(a.id, tds);
        table.append(el('tr', {'data-app': a.id}, ...tds));
        plots.append(plot('transport-' + a.id, `${a.id} (${a.snap.endpoint.transport})`, ['in MB/s', 'out MB/s'], 300, 110));
      }
      const e = a.snap.endpoint;
      const r = (name) => {
        const l = latest(a.id, 'endpoint.' + name);
        return l ? l.rate : undefined;
      };
      const figures = [a.context, a.id, e.transport, fmt(e.peers_connected), fmt(r('messages_received')),
        fmtBytesRate(r('bytes_received')), fmt(r('messages_sent')), fmtBytesRate(r('bytes_sent')),
        fmt(r('back_pressured')), fmt(r('recv_stalls')), fmt(e.rejected), fmt(e.peer_errors),
        fmt(e.recv_pool_in_use), fmt(e.recv_pool_high_water)];
      figures.forEach((f, i) => { tds[i].textContent = f; });
      const rin = dash.series.get(a.id + '/endpoint.bytes_received');
      const rout = dash.series.get(a.id + '/endpoint.bytes_sent');
      if (rin && rout) {
        const mb = (xs) => xs.map((x) => (x === null ? null : x / 1e6));
        setPlot('transport-' + a.id, [rin.t, mb(rin.rate), mb(rout.rate)]);
      }
    }
  };
}

// An async update that is skipped while its previous call is still waiting for its answer.
function oneAtATime(update) {
  let running = false;
  return async () => {
    if (running) return;
    running = true;
    try {
      await update();
    } finally {
      running = false;
    }
  };
}

function selector(id, options, value, onchange) {
  const s = el('select', {id, onchange});
  for (const [v, label] of options) s.append(el('option', {value: v, text: label}));
  s.value = value;
  return s;
}

function logsView(root) {
  const pre = el('pre', {class: 'log', id: 'log-lines'});
  const contextSel = selector('log-context', dash.contexts.map((c) => [c.name, c.name]), dash.self, () => {
    appSel.replaceChildren(...appOptions().map(([v, l]) => el('option', {value: v, text: l})));
    reset();
  });
  const appOptions = () => [['', 'every application'],
    ...(dash.contexts.find((c) => c.name === contextSel.value) || {applications: []}).applications.map((id) => [id, id])];
  const appSel = selector('log-app', appOptions(), '', () => reset());
  const levels = ['trace', 'debug', 'info', 'warning', 'error', 'critical'].map((l) => [l, l]);
  const levelSel = selector('log-level', levels, 'info', () => reset());
  root.append(el('div', {}, 'context ', contextSel, ' application ', appSel, ' level ', levelSel), pre);
  const reset = () => {
    dash.logs = {key: '', since: 0, lines: []};
    pre.replaceChildren();
  };
  // One request at a time: two with the same `since` would show the same lines twice.
  return oneAtATime(async () => {
    const logs = dash.logs;
    const q = new URLSearchParams({level: levelSel.value, since: String(logs.since)});
    if (appSel.value) q.set('app', appSel.value);
    const r = await api('GET', contextPath(contextSel.value, 'logs?' + q.toString()));
    if (logs !== dash.logs) return; // the filters changed meanwhile
    const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    for (const line of r.lines) {
      dash.logs.since = Math.max(dash.logs.since, line.t);
      const cls = line.level + (line.text.startsWith('audit:') ? ' audit' : '');
      pre.append(el('div', {class: cls, text: `${new Date(line.t).toISOString().slice(11, 23)} ${line.level.padEnd(8)} ${line.text}`}));
    }
    while (pre.childElementCount > 2000) pre.firstChild.remove();
    if (stick) pre.scrollTop = pre.scrollHeight;
  });
}

async function historyView(root) {
  const contextSel = selector('history-context', dash.contexts.map((c) => [c.name, c.name]), dash.self, () => loadSeries());
  const seriesSel = el('select', {id: 'history-series', onchange: () => restart()});
  const asRate = el('input', {type: 'checkbox', id: 'history-rate', checked: '', onchange: () => restart()});
  const info = el('span', {class: 'message'});
  root.append(el('div', {}, 'context ', contextSel, ' metric ', seriesSel, ' ', el('label', {}, asRate, ' per second (counters)'), info));
  root.append(el('div', {class: 'plots'}, plot('history-plot', 'history', ['value'], 900, 300)));
  const loadSeries = async () => {
    const list = await api('GET', contextPath(contextSel.value, 'history'));
    seriesSel.replaceChildren(...list.series.map((s) => el('option', {value: `${s.app}/${s.metric}`, text: `${s.app} ${s.metric}`})));
    info.textContent = ` ${list.series.length} series, every ${list.interval_ms} ms, ${list.capacity} samples kept`;
    restart();
  };
  const restart = () => {
    dash.history = {key: seriesSel.value, since: 0, t: [], v: []};
  };
  await loadSeries();
  return oneAtATime(async () => { // as for the logs: points twice otherwise
    const h = dash.history;
    if (!h.key) return;
    const slash = h.key.indexOf('/');
    const q = new URLSearchParams({app: h.key.slice(0, slash), metric: h.key.slice(slash + 1), since: String(h.since)});
    const r = await api('GET', contextPath(contextSel.value, 'history?' + q.toString()));
    if (h !== dash.history) return; // the selection changed meanwhile
    for (let i = 0; i < r.t.length; ++i) {
      h.t.push(r.t[i] / 1000);
      h.v.push(r.v[i]);
      h.since = r.t[i];
    }
    let ys = h.v;
    if (asRate.checked) {
      ys = h.v.map((v, i) => (i === 0 || v < h.v[i - 1] ? null : (v - h.v[i - 1]) / (h.t[i] - h.t[i - 1])));
    }
    setPlot('history-plot', [h.t, ys]);
  });
}

// The run registry as this executive reaches it (GET /api/v1/runs): the runs newest first, and
// one run whole (#/runs/N): its transitions, files, comments and results.
const RUNS_REFRESH_MS = 5000;

const when = (ms) => (ms ? new Date(ms).toLocaleString() : '–');

// A table of rows of cells (text, or elements); heads null: no heading row.
function table(id, heads, rows) {
  return el('table', {id}, heads ? el('tr', {}, ...heads.map((h) => el('th', {text: h}))) : null,
    ...rows.map((cells) => el('tr', {}, ...cells.map((c) => (c instanceof Node ? el('td', {}, c) : el('td', {text: String(c)}))))));
}

async function runDetail(box, number) {
  let r;
  try {
    r = await api('GET', '/api/v1/runs/' + encodeURIComponent(number));
  } catch (e) {
    box.replaceChildren(el('p', {class: 'message error', text: `run ${number}: ${e.message}`}));
    return;
  }
  const summary = r.summary || {};
  const results = Object.entries(summary.results || {}).filter(([, v]) => typeof v === 'number');
  box.replaceChildren(
    el('h2', {id: 'run-detail-title'}, `run ${r.number} `, stateBadge(r.state)),
    table('run-facts', null, [
      ['configuration', `${r.config_name} (${r.config_path})`], ['daqflow', r.version],
      ['started', `${when(r.started_ms)} by ${r.user} on ${r.host}`], ['stopped', when(r.stopped_ms)],
      ['status', summary.status ? summary.status + (summary.failure ? ': ' + summary.failure : '') : '–']]),
    el('h2', {text: 'Results'}), table('run-results', ['figure', 'value'], results.map(([k, v]) => [k, fmt(v, 6)])),
    el('h2', {text: 'Transitions'}),
    table('run-transitions', ['at', 'transition', 'application', 'outcome', 'ms', 'reason'],
      (r.transitions || []).map((t) => [new Date(t.at_ms).toLocaleTimeString(), t.transition, t.application,
        t.outcome, t.duration_ms.toFixed(1), t.reason])),
    el('h2', {text: 'Files'}),
    table('run-files', ['host', 'path', 'application', 'events', 'bytes', 'checksum'],
      (r.files || []).map((f) => [f.host, f.path, f.application, f.events, f.bytes, f.checksum])),
    el('h2', {text: 'Comments'}),
    table('run-comments', ['at', 'by', 'comment'], (r.comments || []).map((c) => [when(c.at_ms), c.user, c.text])));
}

function runsView(root, arg) {
  const message = el('p', {id: 'runs-message'});
  const list = el('div');
  const detail = el('div', {id: 'run-detail'});
  root.append(el('h2', {text: 'Runs'}), message, list, detail);
  if (arg) runDetail(detail, arg);
  let fetched = 0;
  return async () => {
    if (Date.now() - fetched < RUNS_REFRESH_MS) return;
    fetched = Date.now();
    let answer;
    try {
      answer = await api('GET', '/api/v1/runs?limit=50');
    } catch (e) {
      showMessage(message, `the run registry cannot be read from this executive: ${e.message}`, false);
      return;
    }
    message.textContent = `run registry ${answer.registry}`;
    message.className = '';
    const t = table('runs', ['run', 'state', 'configuration', 'started', 'duration', 'by'],
      answer.runs.map((r) => [el('a', {href: '#/runs/' + r.number, text: String(r.number)}), stateBadge(r.state),
        r.config_name, when(r.started_ms),
        r.stopped_ms ? ((r.stopped_ms - r.started_ms) / 1000).toFixed(1) + ' s' : '–', `${r.user}@${r.host}`]));
    answer.runs.forEach((r, i) => {
      const row = t.rows[i + 1]; // after the heading row
      row.dataset.run = r.number;
      row.classList.toggle('selected', String(r.number) === arg);
    });
    list.replaceChildren(t);
  };
}

const VIEWS = {cluster: clusterView, app: appView, evb: evbView, transports: transportsView, logs: logsView, history: historyView, runs: runsView};

async function route() {
  const [, name = 'cluster', arg] = location.hash.split('/');
  const make = VIEWS[name] || clusterView;
  for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', a.dataset.view === name);
  for (const u of dash.plots.values()) u.destroy();
  dash.plots.clear();
  const root = document.getElementById('view');
  root.replaceChildren();
  notice('');
  const view = {name, update: () => {}};
  dash.view = view;
  try {
    const update = await make(root, arg ? decodeURIComponent(arg) : undefined);
    if (dash.view === view) {
      view.update = update;
      await update();
    }
  } catch (e) {
    notice(`the ${name} view could not be shown: ${e.message}`);
  }
}

async function start() {
  const readOnly = document.getElementById('read-only');
  const forced = new URLSearchParams(location.search).has('read-only');
  readOnly.checked = forced || localStorage.getItem('daqflow-read-only') === '1';
  readOnly.disabled = forced;
  document.body.classList.toggle('read-only', readOnly.checked);
  readOnly.addEventListener('change', () => {
    localStorage.setItem('daqflow-read-only', readOnly.checked ? '1' : '0');
    document.body.classList.toggle('read-only', readOnly.checked);
  });
  const token = document.getElementById('token');
  token.value = sessionStorage.getItem('daqflow-token') || '';
  token.addEventListener('change', () => sessionStorage.setItem('daqflow-token', token.value));

  try {
    const me = await api('GET', '/api/v1/context');
    dash.self = me.name;
    dash.contexts = await api('GET', '/api/v1/contexts');
    document.getElementById('where').textContent = `context ${me.name} (pid ${me.pid})`;
  } catch (e) {
    notice('the control API did not answer: ' + e.message);
    return;
  }
  await pollOnce();
  window.addEventListener('hashchange', route);
  await route();
  setTimeout(pollLoop, POLL_MS);
}

start();
