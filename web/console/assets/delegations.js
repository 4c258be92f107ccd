// Delegations: the records with filters, and charts of their outcomes and latency over time.
import { allPages, call, tenantPath } from './api.js';
import { failure, field, go, h, hashQuery, page, s, when } from './ui.js';

const STATUSES = ['pending', 'running', 'accepted', 'completed', 'failed', 'timeout', 'rejected'];
// CHARTED is how many of the newest records the charts read.
const CHARTED = 1000;

export async function delegationsPage() {
  const q = hashQuery();
  const status = h('select', { name: 'status', id: 'filter-status' }, h('option', { value: '' }, 'any'),
    ...STATUSES.map((st) => h('option', { value: st, selected: q.get('status') === st }, st)));
  const agent = h('input', { name: 'agentId', id: 'filter-agent', value: q.get('agentId') || '', autocomplete: 'off' });
  const form = h('form', { class: 'inline', 'aria-label': 'Filter delegations' },
    field('Status', status), field('Agent', agent, 'An agentId.'), h('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const next = new URLSearchParams();
    if (status.value) { next.set('status', status.value); }
    if (agent.value.trim()) { next.set('agentId', agent.value.trim()); }
    go(`#/delegations?${next}`);
  });
  const charts = h('section', { 'aria-labelledby': 'charts-title', id: 'charts' }, h('h2', { id: 'charts-title' }, 'Over time'));
  const records = h('section', { 'aria-labelledby': 'records-title', id: 'records' }, h('h2', { id: 'records-title' }, 'Records'));
  page('Delegations', form, charts, records);
  const filter = { status: q.get('status') || '', agentId: q.get('agentId') || '' };
  await Promise.all([renderCharts(charts, filter), renderRecords(records, filter, q.get('cursor') || '')]);
}

async function renderRecords(section, filter, cursor) {
  let data;
  try {
    ({ data } = await call('GET', tenantPath('/delegations'), { query: { ...filter, limit: 20, cursor } }));
  } catch (err) {
    section.append(failure(err, 'The records could not be read: '));
    return;
  }
  if (!data.items.length) {
    section.append(h('p', {}, 'No delegation records match.'));
    return;
  }
  const body = h('tbody', {}, ...data.items.map((d) => h('tr', { 'data-id': d.id },
    h('td', {}, when(d.createdAt)), h('td', {}, h('a', { href: `#/cards/${encodeURIComponent(d.agentId)}` }, d.agentId)),
    h('td', {}, d.capability), h('td', {}, d.caller), h('td', {}, d.mode, d.transport ? ` / ${d.transport}` : ''),
    h('td', { class: `status-${d.status}` }, d.status), h('td', { class: 'num', 'data-latency': '' }, latency(d)),
    h('td', {}, d.task ? `${d.task.slice(0, 80)}${d.task.length > 80 || d.taskTruncated ? '…' : ''}` : ''),
    h('td', {}, d.error || ''))));
  section.append(h('table', { id: 'records-table' },
    h('caption', {}, 'Newest first'),
    h('thead', {}, h('tr', {}, ...['Created', 'Agent', 'Capability', 'Caller', 'Mode', 'Status', 'Latency', 'Task', 'Error'].map((t) => h('th', { scope: 'col' }, t)))),
    body));
  const nav = h('nav', { class: 'pager', 'aria-label': 'Record pages' });
  if (cursor) {
    const first = new URLSearchParams(hashQuery());
    first.delete('cursor');
    nav.append(h('a', { href: `#/delegations?${first}` }, 'Newest'));
  }
  if (data.nextCursor) {
    const next = new URLSearchParams(hashQuery());
    next.set('cursor', data.nextCursor);
    nav.append(h('a', { href: `#/delegations?${next}`, rel: 'next', id: 'next-records' }, 'Older'));
  }
  section.append(nav);
}

// UNFINISHED are the statuses of a delegation that has not ended, and so has no latency yet.
const UNFINISHED = ['pending', 'running', 'accepted'];

// latency is a record's latency as the table shows it: its milliseconds once it ended (0 ms
// included), nothing while it runs.
export function latency(d) {
  return UNFINISHED.includes(d.status) || typeof d.latencyMs !== 'number' ? '' : `${d.latencyMs} ms`;
}

// Bucket sizes, in ms, the charts choose from: the smallest that makes at most 24 buckets.
const SIZES = [1, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 24 * 3600, 7 * 24 * 3600].map((x) => x * 1000);

// buckets groups records by the time they were made: per bucket the count of each status and
// the latency percentiles of those that ended (completed, failed, timeout).
export function buckets(items) {
  const times = items.map((d) => Date.parse(d.createdAt));
  const from = Math.min(...times);
  const to = Math.max(...times);
  const size = SIZES.find((sz) => (to - from) / sz < 24) || SIZES[SIZES.length - 1];
  const start = Math.floor(from / size) * size;
  const n = Math.floor((to - start) / size) + 1;
  const out = Array.from({ length: n }, (_, i) => ({ at: new Date(start + i * size), counts: {}, latencies: [] }));
  items.forEach((d, i) => {
    const b = out[Math.floor((times[i] - start) / size)];
    b.counts[d.status] = (b.counts[d.status] || 0) + 1;
    if (['completed', 'failed', 'timeout'].includes(d.status)) { b.latencies.push(d.latencyMs || 0); }
  });
  for (const b of out) {
    b.latencies.sort((x, y) => x - y);
    b.p50 = percentile(b.latencies, 0.5);
    b.p95 = percentile(b.latencies, 0.95);
  }
  return { size, buckets: out };
}

// percentile is the nearest-rank percentile of sorted values, or null for none.
export function percentile(sorted, p) {
  if (!sorted.length) { return null; }
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];
}

function label(date, size) {
  return size >= 24 * 3600 * 1000 ? date.toLocaleDateString() : date.toLocaleTimeString();
}

const W = 640;
const H = 200;
const PAD = { l: 48, r: 12, t: 12, b: 28 };

async function renderCharts(section, filter) {
  let items;
  let more;
  try {
    ({ items, more } = await allPages(tenantPath('/delegations'), filter, CHARTED));
  } catch (err) {
    section.append(failure(err, 'The records could not be read: '));
    return;
  }
  if (!items.length) {
    section.append(h('p', {}, 'No delegations to chart.'));
    return;
  }
  const { size, buckets: bs } = buckets(items);
  section.append(h('p', { id: 'charted' },
    `${items.length} ${more ? 'newest ' : ''}delegation${items.length === 1 ? '' : 's'}, from ${when(items[items.length - 1].createdAt)} to ${when(items[0].createdAt)}, in steps of ${size / 1000} s.`));
  section.append(outcomeChart(bs, size), latencyChart(bs, size), numbers(bs, size));
}

function axes(max, unit, bs, size) {
  const g = s('g', { class: 'axes' });
  const plotH = H - PAD.t - PAD.b;
  for (const f of [0, 0.5, 1]) {
    const y = PAD.t + plotH * (1 - f);
    g.append(s('line', { x1: PAD.l, x2: W - PAD.r, y1: y, y2: y, class: 'grid' }),
      s('text', { x: PAD.l - 6, y: y + 4, 'text-anchor': 'end' }, `${tick(max * f)}${unit}`));
  }
  const step = Math.max(1, Math.ceil(bs.length / 6));
  bs.forEach((b, i) => {
    if (i % step === 0) {
      g.append(s('text', { x: xOf(i, bs.length) + bandW(bs.length) / 2, y: H - 8, 'text-anchor': 'middle' }, label(b.at, size)));
    }
  });
  return g;
}

// tick is an axis value: whole above 10, else with a decimal.
function tick(v) {
  return v >= 10 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1);
}

// barW is a bar's width in a band, barX its left edge: bars stay narrow when there are few.
function barW(n) { return Math.max(1, Math.min(bandW(n) - 4, 48)); }
function barX(i, n) { return xOf(i, n) + (bandW(n) - barW(n)) / 2; }

function bandW(n) { return (W - PAD.l - PAD.r) / n; }
function xOf(i, n) { return PAD.l + i * bandW(n); }

function outcomeChart(bs, size) {
  const present = STATUSES.filter((st) => bs.some((b) => b.counts[st]));
  const max = Math.max(1, ...bs.map((b) => Object.values(b.counts).reduce((x, y) => x + y, 0)));
  const plotH = H - PAD.t - PAD.b;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'outcomes-title', id: 'outcomes-chart', class: 'chart' },
    s('title', { id: 'outcomes-title' }, 'Delegations by outcome over time'), axes(max, '', bs, size));
  bs.forEach((b, i) => {
    let y = PAD.t + plotH;
    for (const st of present) {
      const n = b.counts[st] || 0;
      if (!n) { continue; }
      const hgt = (n / max) * plotH;
      y -= hgt;
      svg.append(s('rect', { x: barX(i, bs.length), y, width: barW(bs.length), height: hgt, class: `bar status-${st}`, 'data-status': st, 'data-count': n },
        s('title', {}, `${label(b.at, size)}: ${n} ${st}`)));
    }
  });
  const legend = h('ul', { class: 'legend', 'aria-label': 'Outcomes' },
    ...present.map((st) => h('li', {}, h('span', { class: `swatch status-${st}`, 'aria-hidden': 'true' }), ` ${st}`)));
  return h('figure', {}, h('figcaption', {}, 'Outcomes'), svg, legend);
}

function latencyChart(bs, size) {
  const max = Math.max(1, ...bs.map((b) => b.p95 || 0));
  const plotH = H - PAD.t - PAD.b;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'latency-title', id: 'latency-chart', class: 'chart' },
    s('title', { id: 'latency-title' }, 'Delegation latency over time, p50 and p95'), axes(max, ' ms', bs, size));
  for (const key of ['p95', 'p50']) {
    const pts = [];
    bs.forEach((b, i) => {
      if (b[key] === null) { return; }
      pts.push([xOf(i, bs.length) + bandW(bs.length) / 2, PAD.t + plotH * (1 - b[key] / max), b, i]);
    });
    // Lines join neighbouring steps only: a step without finished delegations is a gap.
    let run = [];
    const flush = () => {
      if (run.length > 1) { svg.append(s('polyline', { points: run.map((p) => `${p[0]},${p[1]}`).join(' '), class: `line ${key}` })); }
      run = [];
    };
    for (const p of pts) {
      if (run.length && p[3] !== run[run.length - 1][3] + 1) { flush(); }
      run.push(p);
    }
    flush();
    for (const [x, y, b] of pts) {
      svg.append(s('circle', { cx: x, cy: y, r: 3, class: `point ${key}`, 'data-ms': b[key] }, s('title', {}, `${label(b.at, size)}: ${key} ${b[key]} ms`)));
    }
  }
  const legend = h('ul', { class: 'legend', 'aria-label': 'Percentiles' },
    h('li', {}, h('span', { class: 'swatch p50', 'aria-hidden': 'true' }), ' p50'),
    h('li', {}, h('span', { class: 'swatch p95', 'aria-hidden': 'true' }), ' p95'));
  return h('figure', {}, h('figcaption', {}, 'Latency of finished delegations (p50, p95)'), svg, legend);
}

// numbers is the charts' data as a table, for screen readers and for reading exact values.
function numbers(bs, size) {
  const present = STATUSES.filter((st) => bs.some((b) => b.counts[st]));
  const rows = bs.filter((b) => Object.keys(b.counts).length).map((b) => h('tr', {},
    h('th', { scope: 'row' }, label(b.at, size)),
    ...present.map((st) => h('td', { class: 'num', 'data-status': st }, String(b.counts[st] || 0))),
    h('td', { class: 'num' }, b.p50 === null ? '' : String(b.p50)),
    h('td', { class: 'num' }, b.p95 === null ? '' : String(b.p95))));
  const totals = h('tr', { class: 'totals' }, h('th', { scope: 'row' }, 'All'),
    ...present.map((st) => h('td', { class: 'num', 'data-status': st, 'data-total': st },
      String(bs.reduce((n, b) => n + (b.counts[st] || 0), 0)))),
    h('td', {}), h('td', {}));
  return h('details', { id: 'chart-numbers' }, h('summary', {}, 'The numbers'),
    h('table', {},
      h('caption', {}, `Delegations per ${size / 1000} s: count by outcome, latency in ms`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'From'), ...present.map((st) => h('th', { scope: 'col' }, st)),
        h('th', { scope: 'col' }, 'p50'), h('th', { scope: 'col' }, 'p95'))),
      h('tbody', {}, ...rows, totals)));
}
