// Cairn's web page: the approval inbox, sessions and their timelines. It is
// served by `cairn serve` and talks to the HTTP API (docs/http-api.md) with
// the token the person gives, kept for the tab (sessionStorage). No build
// step and no dependency: this file is the page.
'use strict';

const state = {
  token: sessionStorage.getItem('cairn.token') || '',
  me: null,
  agents: [],
  inbox: new Map(), // session id → paused session summary
  seqs: new Map(), // session id → the newest seq seen of it (older states are not applied)
  cards: new Map(), // the inbox cards shown, by session, interrupt and seq
  inboxGen: 0, // the inbox update under way (a newer one stops an older one)
  filters: { kind: '', agent: '', tool: '' },
  selected: new Map(), // inbox cards picked for a bulk decision: "session/interrupt" → {s, it}
  suggestions: new Map(), // standing rules the history supports: "session/interrupt" → suggestion
  view: '',
  stop: null, // aborts the current view's live stream
};

// ---------- small helpers ----------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (v === true) e.setAttribute(k, '');
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : shown(String(c), !UNFOLDED.has(tag)));
  }
  return e;
}

// ---------- what the page shows of text it did not write ----------
// Every string the page shows goes through el(), so through shown():
// characters a reader cannot see, or that reorder the text around them (a
// right-to-left override shows "\u202egpj.exe" as "exe.jpg"), appear as a
// marked ⟨U+202E⟩, as session.Visible does for the terminal, the action
// pages and the Slack bridge; a long value is folded behind "expand".

// HIDDEN: control (but newline and tab), format (bidi controls, zero-width
// characters, the BOM, tags), line and paragraph separators, blank letters.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u034F\u115F\u1160\u3164\uFFA0\u180B-\u180F]/gu;
const HAS_HIDDEN = new RegExp(HIDDEN.source, 'u'); // no lastIndex to carry between calls
const PICTURE = /[\p{Extended_Pictographic}\uFE0F\u{1F3FB}-\u{1F3FF}]/u;
const FOLD_CHARS = 1200; // a value longer than this, or of more lines,
const FOLD_LINES = 30; //   shows its start and an "expand" button
const UNFOLDED = new Set(['option', 'button', 'title', 'textarea']);

// hiddenAt: s[i] is a character to mark (a joiner inside an emoji is not).
function hiddenAt(s, i, ch) {
  if (ch === '\n' || ch === '\t') return false;
  if (ch !== '\u200D') return true;
  const before = String.fromCodePoint(s.codePointAt(i > 1 && /[\uDC00-\uDFFF]/.test(s[i - 1]) ? i - 2 : i - 1) || 32);
  const after = String.fromCodePoint(s.codePointAt(i + 1) || 32);
  return !(PICTURE.test(before) && PICTURE.test(after));
}

const marker = (ch) => '⟨U+' + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0') + '⟩';

// visibleText is s with hidden characters written as markers (for text
// set without el(): error messages).
function visibleText(s) {
  return String(s).replace(HIDDEN, (ch, i, all) => hiddenAt(all, i, ch) ? marker(ch) : ch);
}

// marked is s as nodes: its text, and a span.hidden-char per marker.
function marked(s) {
  if (!HAS_HIDDEN.test(s)) return document.createTextNode(s);
  const out = document.createDocumentFragment();
  let from = 0;
  for (const m of s.matchAll(HIDDEN)) {
    if (!hiddenAt(s, m.index, m[0])) continue;
    if (m.index > from) out.append(s.slice(from, m.index));
    const code = marker(m[0]);
    out.append(el('span', { class: 'hidden-char', title: 'an invisible character, ' + code.slice(1, -1) }, code));
    from = m.index + m[0].length;
  }
  if (from < s.length) out.append(s.slice(from));
  return out;
}

// shown is s as the page shows it: marked and, when fold and it is long,
// folded to its start with an "expand" button that shows the rest.
function shown(s, fold) {
  let cut = s.length > FOLD_CHARS ? FOLD_CHARS : -1;
  for (let i = 0, n = 0; fold && i < s.length && i < FOLD_CHARS; i++) {
    if (s[i] === '\n' && ++n === FOLD_LINES) { cut = i; break; }
  }
  if (!fold || cut < 0) return marked(s);
  if (/[\uD800-\uDBFF]/.test(s[cut - 1])) cut--; // not inside a surrogate pair
  const box = el('span', { class: 'folded' });
  const rest = s.length - cut;
  const expand = el('button', { class: 'expand', type: 'button', title: 'show the whole value' }, 'expand (' + rest.toLocaleString('en') + ' more characters)');
  expand.addEventListener('click', () => box.replaceChildren(marked(s)));
  box.append(marked(s.slice(0, cut)), '… ', expand);
  return box;
}

const main = () => document.getElementById('main');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pretty = (v) => JSON.stringify(v, null, 2);
const canDecide = () => state.me && state.me.role !== 'user';
// Messages and cancels speak for the session's owner: its owner or an admin.
const canSpeak = (s) => state.me && (!state.me.auth || state.me.role === 'admin' || s.owner === state.me.name);

function ago(t) {
  const s = Math.max(0, (Date.now() - new Date(t).getTime()) / 1000);
  if (s < 60) return Math.floor(s) + ' s ago';
  if (s < 3600) return Math.floor(s / 60) + ' min ago';
  if (s < 86400) return Math.floor(s / 3600) + ' h ago';
  return Math.floor(s / 86400) + ' d ago';
}

function countdown(t) {
  const s = Math.floor((new Date(t).getTime() - Date.now()) / 1000);
  if (s <= 0) return 'expired';
  const m = Math.floor(s / 60);
  return 'expires in ' + (m > 0 ? m + ' min ' : '') + (s % 60) + ' s';
}

function headers(extra) {
  const h = Object.assign({ Accept: 'application/json' }, extra);
  if (state.token) h.Authorization = 'Bearer ' + state.token;
  return h;
}

class APIError extends Error {
  constructor(status, body) {
    super(visibleText((body && body.error && body.error.message) || 'HTTP ' + status));
    this.status = status;
    this.code = body && body.error && body.error.code;
  }
}

async function api(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch (e) { /* no body */ }
  if (res.status === 401) { signOut(); }
  if (!res.ok) throw new APIError(res.status, data);
  return data;
}

// follow reads a Server-Sent Events stream with fetch (EventSource cannot
// send the Authorization header) and reconnects until signal aborts.
async function follow(url, onEvent, signal) {
  while (!signal.aborted) {
    try {
      const res = await fetch(url(), { headers: headers({ Accept: 'text/event-stream' }), signal });
      if (res.status === 401) { signOut(); return; }
      if (res.ok) {
        onEvent('open', null);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let type = 'message', data = '';
            for (const line of block.split('\n')) {
              if (line.startsWith('event: ')) type = line.slice(7);
              else if (line.startsWith('data: ')) data += line.slice(6);
            }
            if (data) onEvent(type, JSON.parse(data));
          }
        }
      }
    } catch (e) {
      if (signal.aborted) return;
    }
    await sleep(1000);
  }
}

// ---------- sign in ----------

async function signOut() {
  const viaCookie = !state.token && state.me && state.me.auth;
  state.token = '';
  state.me = null;
  sessionStorage.removeItem('cairn.token');
  // A sign-in through the identity provider lives in an HttpOnly cookie:
  // the server forgets it.
  if (viaCookie) { try { await fetch('/auth/logout', { method: 'POST' }); } catch (e) { /* shown as signed out anyway */ } }
  showLogin(viaCookie ? 'You are signed out.' : 'Your token was refused or has been removed. Paste a token to go on.');
}

function showLogin(message) {
  if (state.stop) state.stop.abort();
  document.getElementById('whoami').textContent = '';
  const input = el('input', { type: 'password', id: 'token', placeholder: 'bearer token', size: 40, autocomplete: 'off' });
  const form = el('form', { class: 'panel', id: 'login', onsubmit: async (e) => {
    e.preventDefault();
    state.token = input.value.trim();
    sessionStorage.setItem('cairn.token', state.token);
    await start();
  } },
  el('h2', {}, 'Sign in'),
  el('p', { class: 'muted' }, message || 'This server asks for a bearer token (the one you use with the API). It is kept for this tab only.'),
  el('div', { class: 'actions' }, input, el('button', { class: 'primary', type: 'submit' }, 'Use token')));
  main().replaceChildren(form);
  input.focus();
  // Where the server signs people in with the company's identity provider,
  // offer that first.
  fetch('/auth/info').then((r) => r.json()).then((info) => {
    if (!info.sign_in) return;
    form.insertBefore(el('p', { class: 'actions' }, el('a', { class: 'button primary', id: 'sso', href: info.sign_in }, 'Sign in with ' + new URL(info.issuer).host)), form.children[1]);
  }).catch(() => {});
}

// ---------- agents and schemas ----------

function toolOf(agent, name) {
  const a = state.agents.find((x) => x.name === agent);
  return a && a.tools.find((t) => t.name === name);
}

// interruptAgent is the agent an interrupt is about: the caller of the
// tool (its path ends with that call), or, for a message, the interactive
// agent that spoke (its path ends at the call that started it; it is the
// top of the stack).
function interruptAgent(s, it) {
  if (it.ask && it.ask.reply) return s.stack && s.stack.length ? s.stack[s.stack.length - 1].agent : s.agent;
  return it.path && it.path.length ? it.path[it.path.length - 1].agent : s.agent;
}

// ---------- inbox ----------

function inboxItems() {
  const items = [];
  for (const s of state.inbox.values()) {
    for (const it of s.interrupts) items.push({ s, it, agent: interruptAgent(s, it) });
  }
  items.sort((a, b) => new Date(b.s.updated_at) - new Date(a.s.updated_at) || a.it.id.localeCompare(b.it.id));
  return items;
}

function updateCount() {
  const n = inboxItems().length;
  document.getElementById('inbox-count').textContent = n;
  document.title = (n ? '(' + n + ') ' : '') + 'Cairn' + (state.view === 'inbox' ? ' inbox' : '');
}

// newest notes s's seq and reports whether s is at least as new as any state
// of the session seen before: answers and the feed race (a decision's answer
// can arrive after the feed's news of the next pause, which it must not undo).
function newest(s) {
  if ((state.seqs.get(s.id) || 0) > s.seq) return false;
  state.seqs.set(s.id, s.seq);
  return true;
}

function sessionChanged(s) {
  if (!newest(s)) return;
  if (s.status === 'paused' && s.interrupts && s.interrupts.length) state.inbox.set(s.id, s);
  else state.inbox.delete(s.id);
  updateCount();
  updateInboxList();
  loadSuggestions();
}

// loadInbox reads every paused session. Changes the feed brings while it
// reads are newer than the read and stay: a session the read does not list
// leaves the inbox only if nothing changed it meanwhile.
async function loadInbox() {
  const before = new Map(state.inbox);
  const listed = new Map();
  let cursor = '';
  do {
    const page = await api('GET', '/v1/sessions?status=paused&limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    for (const s of page.sessions) if (s.interrupts.length) listed.set(s.id, s);
    cursor = page.next_cursor;
  } while (cursor);
  for (const [id, s] of state.inbox) if (!listed.has(id) && before.get(id) === s) state.inbox.delete(id);
  for (const s of listed.values()) if (newest(s)) state.inbox.set(s.id, s);
  updateCount();
  updateInboxList();
  loadSuggestions();
}

// The cross-session feed keeps the inbox live, whichever process records.
let feedStarted = false;
function startFeed() {
  if (feedStarted) return;
  feedStarted = true;
  const ctl = new AbortController();
  follow(() => '/v1/events', (type, data) => {
    if (type === 'open' || type === 'resync') loadInbox().catch(() => {});
    else if (type === 'session') sessionChanged(data);
  }, ctl.signal).finally(() => { feedStarted = false; });
}

// renderInbox draws the inbox view; later changes go through
// updateInboxList, which keeps the cards it already shows (with what the
// person typed or opened in them) and only adds, removes and reorders.
function renderInbox() {
  const f = state.filters;
  const select = (name, label) => el('select', { id: 'filter-' + name, onchange: (e) => { f[name] = e.target.value; updateInboxList(); } },
    el('option', { value: '' }, label));
  main().replaceChildren(
    el('h2', {}, 'Inbox'),
    el('div', { class: 'filters' },
      select('kind', 'every kind'), select('agent', 'every agent'), select('tool', 'every tool'),
      el('span', { class: 'keys' }, el('kbd', {}, 'j'), '/', el('kbd', {}, 'k'), ' move, ', el('kbd', {}, 'a'), ' approve, ',
        el('kbd', {}, 'r'), ' reject, ', el('kbd', {}, 'e'), ' edit')),
    bulkBar(),
    el('div', { id: 'bulk-results' }),
    el('div', { id: 'inbox' }),
    el('p', { class: 'muted', id: 'inbox-empty' }));
  state.cards = new Map();
  state.selected = new Map();
  updateInboxList();
}

// ---------- bulk decisions: many cards at once ----------

// bulkBar approves or rejects the picked cards in one request (POST
// /v1/decisions): each call is decided as its own card would decide it,
// and the results say what happened to each.
function bulkBar() {
  const reason = el('input', { type: 'text', id: 'bulk-reason', placeholder: 'reason for a rejection (the model sees it)', size: 32 });
  const send = (action) => bulkDecide(action, action === 'reject' ? reason.value : '');
  return el('div', { id: 'bulk', class: 'panel bulk', hidden: true },
    el('span', { id: 'bulk-count' }), ' ',
    el('button', { class: 'primary approve-selected', onclick: () => send('approve') }, 'Approve selected'),
    reason,
    el('button', { class: 'danger reject-selected', onclick: () => send('reject') }, 'Reject selected'),
    el('button', { onclick: () => { state.selected.clear(); syncPicks(); } }, 'Clear'));
}

// bulkable reports whether a card can be picked: an approval or a question
// the caller may decide by approve or reject.
function bulkable(it) {
  const actions = ((it.ask && it.ask.choices) || []).map((c) => c.action);
  return canDecide() && it.may_decide !== false && actions.includes('approve') && actions.includes('reject');
}

// pick picks or unpicks a card.
function pick(s, it, on) {
  const key = s.id + '/' + it.id;
  if (on) state.selected.set(key, { s, it });
  else state.selected.delete(key);
  syncPicks();
}

// pickLike picks every card shown like it: the same kind, tool and agent.
function pickLike(it, agent) {
  for (const x of inboxItems()) {
    if (x.it.kind === it.kind && x.it.tool === it.tool && x.agent === agent && bulkable(x.it)) state.selected.set(x.s.id + '/' + x.it.id, x);
  }
  syncPicks();
}

// syncPicks shows the picks: the checkboxes, and the bar with their count.
function syncPicks() {
  for (const [key, { s, it }] of state.selected) {
    if (!state.inbox.has(s.id) || !state.inbox.get(s.id).interrupts.some((x) => x.id === it.id)) state.selected.delete(key); // decided meanwhile
  }
  for (const box of document.querySelectorAll('input.pick')) box.checked = state.selected.has(box.dataset.key);
  const bar = document.getElementById('bulk');
  if (!bar) return;
  bar.hidden = state.selected.size === 0;
  document.getElementById('bulk-count').textContent = state.selected.size + ' selected';
}

async function bulkDecide(action, reason) {
  const picked = [...state.selected.values()];
  const out = document.getElementById('bulk-results');
  out.replaceChildren(el('p', { class: 'muted' }, (action === 'approve' ? 'Approving ' : 'Rejecting ') + picked.length + '…'));
  let res;
  try {
    res = await api('POST', '/v1/decisions', { decisions: picked.map(({ s, it }) => ({ session_id: s.id, interrupt_id: it.id, action, reason: reason || undefined })) });
  } catch (e) {
    out.replaceChildren(el('p', { class: 'error' }, e.message));
    return;
  }
  const ok = res.results.filter((r) => r.status === 200).length;
  out.replaceChildren(el('div', { class: 'panel' },
    el('p', {}, (action === 'approve' ? 'Approved ' : 'Rejected ') + ok + ' of ' + res.results.length + ' (batch ' + res.batch + ').'),
    el('ul', { class: 'bulk-lines' }, ...res.results.map((r) => el('li', { class: r.status === 200 ? 'notice' : 'error', dataset: { session: r.session_id, status: r.status } },
      r.session_id + ' · ' + r.interrupt_id + ': ' + (r.status === 200 ? action + 'd; the session is ' + r.session_status : r.status + ' ' + r.error.code + ': ' + r.error.message))))));
  for (const r of res.results) if (r.status === 200) state.selected.delete(r.session_id + '/' + r.interrupt_id);
  syncPicks();
}

function fillSelect(id, values) {
  const sel = document.getElementById(id);
  if (!sel) return;
  const want = ['', ...[...new Set(values)].filter(Boolean).sort()];
  const have = [...sel.options].map((o) => o.value);
  if (want.join('\n') === have.join('\n')) return;
  const current = sel.value;
  sel.replaceChildren(sel.options[0], ...want.slice(1).map((v) => el('option', { value: v, selected: v === current }, v)));
}

function updateInboxList() {
  const list = document.getElementById('inbox');
  if (state.view !== 'inbox' || !list) return;
  const f = state.filters;
  const all = inboxItems();
  fillSelect('filter-kind', all.map((x) => x.it.kind));
  fillSelect('filter-agent', all.map((x) => x.agent));
  fillSelect('filter-tool', all.map((x) => x.it.tool));
  const shown = all.filter(({ it, agent }) => (!f.kind || it.kind === f.kind) && (!f.agent || agent === f.agent) && (!f.tool || it.tool === f.tool));
  // The first screenful at once, the rest in chunks: a long inbox is usable
  // before every card exists.
  const gen = ++state.inboxGen;
  const keep = new Map();
  const place = (from, to) => {
    for (let i = from; i < to; i++) {
      const { s, it, agent } = shown[i];
      const key = s.id + '/' + it.id + '/' + s.seq;
      const card = state.cards.get(key) || interruptCard(s, it, agent);
      keep.set(key, card);
      if (list.children[i] !== card) list.insertBefore(card, list.children[i] || null);
    }
  };
  const finish = () => {
    while (list.children.length > shown.length) list.lastChild.remove();
    state.cards = keep;
  };
  let done = Math.min(shown.length, 30);
  place(0, done);
  const more = () => {
    if (gen !== state.inboxGen) return;
    const to = Math.min(shown.length, done + 250);
    place(done, to);
    done = to;
    if (done < shown.length) setTimeout(more, 0);
    else finish();
  };
  if (done < shown.length) setTimeout(more, 0);
  else finish();
  const empty = document.getElementById('inbox-empty');
  empty.textContent = shown.length ? '' : (all.length ? 'Nothing matches the filters.' : 'Nothing waits for a person.');
  empty.hidden = shown.length > 0;
  syncPicks();
}

function breadcrumb(s, it) {
  const parts = [];
  for (const step of it.path || []) parts.push(step.agent, step.tool);
  return parts.length ? parts.join(' › ') : s.agent;
}

function interruptCard(s, it, agent) {
  const key = s.id + '/' + it.id;
  const error = el('div', { class: 'error', role: 'alert' });
  const card = el('article', { class: 'item', tabindex: 0, dataset: { key, kind: it.kind, session: s.id } });
  // Drawn from the interrupt's ask (one description per kind, made by the
  // server): any kind renders here without code of its own.
  const ask = it.ask || { label: it.kind, text: '', choices: [] };
  const tool = it.tool ? toolOf(agent, it.tool) : null;
  const runs = (ask.choices || []).some((c) => c.field === 'arguments');
  const picking = state.view === 'inbox' && bulkable(it);
  card.append(...[
    picking && el('div', { class: 'picker' },
      el('label', {}, el('input', { type: 'checkbox', class: 'pick', dataset: { key: s.id + '/' + it.id }, checked: state.selected.has(s.id + '/' + it.id),
        onchange: (e) => pick(s, it, e.target.checked) }), ' select'),
      el('button', { type: 'button', class: 'pick-like', title: 'select every card of this kind, tool and agent', onclick: () => pickLike(it, agent) }, 'select all like this')),
    el('div', { class: 'crumbs' }, breadcrumb(s, it)),
    el('h3', {}, el('span', { class: 'kind' }, ask.label), it.tool || agent),
    it.remote && el('p', { class: 'remote' }, el('span', { class: 'label' }, 'Asked by a remote agent (A2A): '), it.remote.url, ' · task ', it.remote.task_id),
    s.request && el('blockquote', { class: 'request' }, el('span', { class: 'label' }, 'The request: '), requestText(s)),
    tool && tool.description && el('p', { class: 'about' }, el('span', { class: 'label' }, it.tool + ': '), tool.description),
    runs && el('p', { class: 'runs' }, el('span', { class: 'label' }, 'Approving runs '), whatRuns(tool, it.tool)),
    ask.text && el('p', { class: 'msg' }, askText(s, it)),
    it.output !== undefined && el('pre', { class: 'output' }, cardValue(s, it, 'output')),
    it.arguments !== undefined && !ask.reply && el('pre', { class: 'args' }, cardValue(s, it, 'arguments')),
    previewBlock(s, it),
    ask.warning && el('div', { class: 'warning' }, ask.warning),
    whoDecides(it),
    escalationNote(it),
    el('div', { class: 'meta' }, 'session ', el('a', { href: '#/sessions/' + s.id }, s.id), ' · ', ago(s.updated_at),
      it.expires_at ? ' · ' : '', it.expires_at ? el('span', { class: 'expiry', dataset: { at: it.expires_at } }, countdown(it.expires_at)) : ''),
    actions(s, it, agent, card, error),
    error].filter(Boolean));
  return card;
}

// ---------- previews: what a call would do ----------

// previewBlock is a call's preview (its tool's dry run, computed before the
// pause): a diff's lines coloured, JSON folded, text as it is, a failure
// as its message. A preview is a tool's output: drawn through el() as
// text, never as HTML. A listing cuts a long one; "expand" loads it whole.
function previewBlock(s, it) {
  const p = it.preview;
  if (!p) return null;
  const cut = (it.truncated || []).includes('preview');
  return el('div', { class: 'preview' },
    el('span', { class: 'label' }, p.error ? 'Preview' : 'Preview (' + p.format + '): what the call would do'),
    cut ? previewCut(s, it) : previewBody(p));
}

function previewBody(p) {
  if (p.error) return el('div', { class: 'preview-error error' }, 'Preview failed: ' + p.error);
  let body;
  if (p.format === 'json') {
    body = el('div', { class: 'preview-json' }, jsonTree(p.content, 0));
  } else if (p.format === 'diff') {
    body = el('pre', { class: 'preview-diff' }, ...String(p.content).replace(/\n$/, '').split('\n').map((line) => el('span', { class: diffClass(line) }, marked(line))));
  } else {
    body = el('pre', { class: 'preview-text' }, marked(String(p.content)));
  }
  return p.truncated ? el('div', {}, body, el('span', { class: 'muted' }, 'cut: the dry run printed more than a preview keeps')) : body;
}

function previewCut(s, it) {
  const box = el('span', { class: 'folded' });
  const expand = el('button', { class: 'expand', type: 'button', title: 'load and show the whole preview' }, 'expand (the whole preview)');
  expand.addEventListener('click', async () => {
    try { box.replaceChildren(previewBody((await wholeInterrupt(s, it)).preview)); } catch (e) { expand.textContent = e.message; }
  });
  box.append(el('pre', { class: 'preview-text' }, marked(String(it.preview.content).replace(/…$/, ''))), '… ', expand);
  return box;
}

function diffClass(line) {
  if (line.startsWith('+++') || line.startsWith('---')) return 'file';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  if (line.startsWith('@@')) return 'hunk';
  return 'ctx';
}

// jsonTree folds a JSON value: an object or array is a <details> (open at
// the top), its members indented under it.
function jsonTree(v, depth) {
  if (v === null || typeof v !== 'object') return el('span', { class: 'json-value' }, JSON.stringify(v));
  const entries = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  const summary = Array.isArray(v) ? '[' + entries.length + (entries.length === 1 ? ' item]' : ' items]') : '{' + entries.length + (entries.length === 1 ? ' key}' : ' keys}');
  return el('details', { class: 'json', open: depth < 1 }, el('summary', {}, summary),
    ...entries.map(([k, x]) => el('div', { class: 'json-member' }, el('span', { class: 'json-key' }, Array.isArray(v) ? k + ': ' : JSON.stringify(k) + ': '), jsonTree(x, depth + 1))));
}

// whoDecides says who may approve a call (its approvers) and, for one
// that needs several people, who approved it so far: "1 of 2 approvals:
// ana". Nothing for an interrupt any approver decides.
function whoDecides(it) {
  const a = it.approvers;
  if (!a && !it.required) return null;
  const parts = [];
  if (a && a.groups && a.groups.length) parts.push('Decided by a member of ' + a.groups.join(' or '));
  if (a && a.not_requester) parts.push('not by who asked for it' + ((it.requested_by || []).length ? ' (' + it.requested_by.map((p) => p.name || p.subject).join(', ') + ')' : ''));
  if (it.required) {
    const got = (it.approvals || []).map((p) => p.actor.name || p.actor.subject);
    parts.push(got.length + ' of ' + it.required + ' approvals' + (got.length ? ': ' + got.join(', ') + ' approved' : ''));
  }
  return el('p', { class: 'approvers' }, parts.join(' · '));
}

// escalationNote says what the interrupt's schedule did and will do (its
// reminders sent, its escalations, the next step) and what happens at
// its deadline; nothing for one without a schedule.
function escalationNote(it) {
  const steps = it.schedule || [];
  if (!steps.length && !it.on_expiry) return null;
  const parts = [];
  const reminders = steps.filter((st) => st.fired_at && st.remind).length;
  if (reminders) parts.push(el('span', { class: 'badge reminded' }, reminders > 1 ? 'reminded ' + reminders + ' times' : 'reminded'));
  for (const st of steps.filter((st) => st.fired_at && (st.escalate_to || []).length)) {
    parts.push((st.hand_over ? 'handed to ' : 'escalated to ') + st.escalate_to.join(', ') + ' ' + ago(st.fired_at));
  }
  const next = steps.find((st) => !st.fired_at);
  if (next) {
    const left = countdown(next.at).replace('expires in', 'in');
    parts.push('next: ' + ((next.escalate_to || []).length ? (next.hand_over ? 'hand to ' : 'escalate to ') + next.escalate_to.join(', ') : 'a reminder') + ' ' + (left === 'expired' ? 'now' : left));
  }
  const o = it.on_expiry;
  if (o && it.expires_at) {
    const what = { reject: 'rejected', approve: 'approved', fail: 'the session fails', ask: 'asked again' }[o.action] || o.action;
    parts.push('at the deadline: ' + what + (o.reason ? ' (' + o.reason + ')' : ''));
  }
  const p = el('p', { class: 'escalation' });
  parts.forEach((part, i) => p.append(i ? ' · ' : '', part));
  return p;
}

// requestText is the session's request (the start of the user's last
// message; the session page has it whole), folded to a few lines.
function requestText(s) {
  const short = 300;
  if (s.request.length <= short) return marked(s.request);
  const box = el('span', { class: 'folded' });
  const expand = el('button', { class: 'expand', type: 'button', title: 'show more of the request' }, 'more');
  expand.addEventListener('click', () => box.replaceChildren(marked(s.request)));
  box.append(marked(s.request.slice(0, short)), '… ', expand);
  return box;
}

// whatRuns says, in words, what approving a call of tool runs.
function whatRuns(tool, name) {
  if (!tool) return 'the tool ' + name;
  switch (tool.kind) {
    case 'agent': return 'the sub-agent ' + tool.agent + ', which works on its own and reports back';
    case 'interactive_agent': return 'the sub-agent ' + tool.agent + ', which talks with the user until it is done';
    case 'handoff': return 'a handoff: ' + tool.agent + ' takes over the conversation';
    default: return tool.runs || 'the tool ' + name + ' (a function of the program that serves Cairn)';
  }
}

// cardValue is an interrupt's field as its card shows it. A listing holds
// a preview of a long value (named in it.truncated): the card shows its
// start, and "expand" loads the whole value from the session.
function cardValue(s, it, field) {
  const text = (v) => field === 'arguments' || field === 'output' ? pretty(v) : v;
  if (!(it.truncated || []).includes(field)) return text(it[field]);
  const box = el('span', { class: 'folded' });
  const expand = el('button', { class: 'expand', type: 'button', title: 'load and show the whole value' }, 'expand (the whole value)');
  expand.addEventListener('click', async () => {
    try { box.replaceChildren(marked(text((await wholeInterrupt(s, it))[field]))); } catch (e) { expand.textContent = e.message; }
  });
  // The preview of arguments is the start of their JSON, as a string.
  box.append(marked(String(it[field]).replace(/…$/, '').slice(0, FOLD_CHARS)), '… ', expand);
  return box;
}

// askText is what the card says (ask.text). A listing cuts a long
// message, question or text: the card shows the start, and "expand"
// loads the whole text from the session.
function askText(s, it) {
  if (!(it.truncated || []).some((f) => f === 'message' || f === 'question' || f === 'text')) return it.ask.text;
  const box = el('span', { class: 'folded' });
  const expand = el('button', { class: 'expand', type: 'button', title: 'load and show the whole text' }, 'expand (the whole text)');
  expand.addEventListener('click', async () => {
    try { box.replaceChildren(marked((await wholeInterrupt(s, it)).ask.text)); } catch (e) { expand.textContent = e.message; }
  });
  box.append(marked(it.ask.text.replace(/…$/, '').slice(0, FOLD_CHARS)), '… ', expand);
  return box;
}

// wholeInterrupt is it as the session has it, with no value cut.
async function wholeInterrupt(s, it) {
  const whole = (await api('GET', '/v1/sessions/' + encodeURIComponent(s.id))).interrupts.find((x) => x.id === it.id);
  if (!whole) throw new Error('this interrupt is no longer pending');
  return whole;
}

// actions are the card's choices, from it.ask: a button per choice, with
// the value its field takes (a reason, a text answer, a form from the
// choice's schema, edited arguments). A reply box for an agent waiting
// for the user.
function actions(s, it, agent, card, error) {
  const box = el('div', { class: 'actions' });
  const ask = it.ask || { choices: [] };
  if (ask.reply && !canSpeak(s)) {
    box.append(el('span', { class: 'muted' }, 'The session\'s owner replies.'));
    return box;
  }
  if (ask.reply) {
    const text = el('input', { type: 'text', class: 'reply', placeholder: 'your reply', size: 40 });
    box.append(text, el('button', { class: 'primary', onclick: () => reply(s, text.value, error) }, 'Reply'));
    return box;
  }
  if (!canDecide() || it.may_decide === false) {
    // The server says who may decide (its one decision point): a card
    // another person decides is shown, without buttons.
    box.append(el('span', { class: 'muted may-see' }, canDecide() ? 'You may see this; someone else decides it.' : 'An approver decides this.'));
    return box;
  }
  if (ask.link) box.append(el('a', { class: 'url', href: ask.link, target: '_blank', rel: 'noopener noreferrer' }, 'Open ' + ask.link));
  const reason = el('input', { type: 'text', class: 'reason', placeholder: 'reason (the model sees it)', size: 28 });
  // Remember applies to the approval of a tool call (it takes arguments).
  const remember = (ask.choices || []).some((c) => c.field === 'arguments') ? el('input', { type: 'checkbox', class: 'remember' }) : null;
  // A standing rule: the same decision for every matching call, until it
  // expires or is revoked (docs/rules.md); one person decides the call.
  const rule = remember && !(it.required > 1) && !(it.approvers && it.approvers.not_requester) ? ruleForm(it) : null;
  const remembered = () => remember && remember.checked && !(rule && rule.on()) ? 'session' : undefined;
  const granted = () => rule && rule.on() ? rule.value() : undefined;
  let reasonShown = false;
  (ask.choices || []).forEach((c, i) => {
    const cls = [i === 0 ? 'primary' : '', c.action === 'reject' || c.action === 'fail' ? 'danger' : '', c.action].filter(Boolean).join(' ');
    const send = (extra, fieldErrors) => decide(s, Object.assign({ interrupt_id: it.id, action: c.action }, extra), error, fieldErrors);
    switch (c.field) {
      case 'reason':
        if (!reasonShown) { box.append(reason); reasonShown = true; }
        box.append(el('button', { class: cls, onclick: () => send({ reason: reason.value, remember: c.action === 'reject' ? remembered() : undefined, rule: c.action === 'reject' ? granted() : undefined }) }, c.label));
        break;
      case 'text': {
        const answer = el('input', { type: 'text', class: 'answer', placeholder: 'your answer', size: 30 });
        box.append(answer, el('button', { class: cls, onclick: () => send({ text: answer.value }) }, c.label));
        break;
      }
      case 'arguments':
        // As asked, or with arguments edited in a form from the tool's schema.
        box.append(el('button', { class: cls, onclick: () => send({ remember: remembered(), rule: granted() }) }, c.label),
          el('button', { class: 'edit', onclick: () => openEditor(s, it, agent, card, error, c, (args, fieldErrors) => send({ arguments: args, remember: remembered() }, fieldErrors)) }, 'Edit arguments'));
        break;
      case 'content':
      case 'output': {
        // A form from the choice's schema (a 400 shows at its field). The
        // only way to answer (a question's own form) opens at once.
        const start = c.default !== undefined && typeof c.default === 'object' && c.default ? c.default : {};
        const open = () => {
          const old = card.querySelector('form.edit');
          if (old) { old.remove(); return; }
          schemaForm(card, c.schema || {}, start, c.default === undefined, c.label,
            (value, fieldErrors) => send({ [c.field]: value }, fieldErrors));
        };
        if (i === 0 && c.field === 'content') queueMicrotask(open);
        else box.append(el('button', { class: cls, onclick: open }, c.label));
        break;
      }
      default:
        box.append(el('button', { class: cls, onclick: () => send({}) }, c.label));
    }
  });
  if (remember) box.append(el('label', { class: 'muted' }, remember, ' remember for this session'));
  if (rule) box.append(rule.box);
  // A rule the decision history supports: GET /v1/interrupts' suggestion,
  // read apart from the sessions the inbox lists (loadSuggestions).
  if (rule) {
    const slot = el('div', { class: 'suggestion-slot' });
    box.append(slot);
    card.suggest = (sg) => slot.replaceChildren(...(sg ? [suggestionLine(s, it, sg, error)] : []));
    card.suggest(state.suggestions.get(s.id + '/' + it.id));
  }
  return box;
}

// suggestionLine offers a suggested standing rule, its evidence, and a
// button that approves the call and grants the rule.
function suggestionLine(s, it, sg, error) {
  const ev = sg.evidence;
  return el('div', { class: 'suggestion' },
    el('span', { class: 'label' }, 'Suggested: '),
    'approve ' + sg.rule.tool + ' of ' + sg.rule.agent + (sg.rule.if ? ' when ' + sg.rule.if : '') + ' without asking, for ' + sg.rule.duration +
      ' (approved ' + ev.approvals + ' times by ' + ev.people + ' people since ' + new Date(ev.since).toLocaleDateString() + ', never rejected or edited) ',
    el('button', { class: 'take-suggestion', onclick: () => decide(s, { interrupt_id: it.id, action: 'approve', rule: { scope: sg.rule.scope, if: sg.rule.if || undefined, duration: sg.rule.duration } }, error) },
      'Approve and grant this rule'));
}

// loadSuggestions reads the inbox's suggestions (a few pages of
// GET /v1/interrupts) and shows them on the cards; called, at most every
// half second, when the inbox changes.
let suggestionsDue = null;
function loadSuggestions() {
  if (suggestionsDue || !canDecide()) return;
  suggestionsDue = setTimeout(async () => {
    suggestionsDue = null;
    const found = new Map();
    try {
      let cursor = '';
      for (let i = 0; i < 5; i++) {
        const page = await api('GET', '/v1/interrupts?kind=approval&limit=200' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
        for (const p of page.interrupts) if (p.suggestion) found.set(p.session_id + '/' + p.id, p.suggestion);
        cursor = page.next_cursor;
        if (!cursor) break;
      }
    } catch (e) { return; }
    state.suggestions = found;
    for (const [key, card] of state.cards) if (card.suggest) card.suggest(found.get(key.split('/').slice(0, 2).join('/')));
  }, 500);
}

// ruleForm is a card's standing-rule grant: off until ticked; its
// condition is pre-filled from the call's arguments (each top-level
// string, number or boolean), its scope is the agent, its duration 30 days.
function ruleForm(it) {
  const on = el('input', { type: 'checkbox', class: 'rule-on' });
  const scope = el('select', { class: 'rule-scope' }, ...['agent', 'session', 'tenant'].map((v) => el('option', { value: v }, v === 'agent' ? 'this agent' : v === 'session' ? 'this session' : 'the tenant')));
  const cond = el('input', { type: 'text', class: 'rule-if', size: 40, value: ruleCondition(it.arguments) });
  const duration = el('input', { type: 'text', class: 'rule-duration', size: 6, value: '30d' });
  const box = el('div', { class: 'rule muted' }, el('label', {}, on, ' make it a standing rule for ', it.tool || 'this tool'), ' in ', scope,
    ' if ', cond, ' for ', duration);
  return {
    box,
    on: () => on.checked,
    value: () => ({ scope: scope.value, if: cond.value.trim() || undefined, duration: duration.value.trim() || undefined }),
  };
}

// ruleCondition is a CEL condition that the arguments satisfy: each
// top-level scalar equals its value.
function ruleCondition(args) {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return '';
  return Object.keys(args).sort().filter((k) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && ['string', 'number', 'boolean'].includes(typeof args[k]))
    .map((k) => 'args.' + k + ' == ' + JSON.stringify(args[k])).join(' && ');
}

async function decide(s, decision, error, fieldErrors) {
  error.textContent = '';
  for (const k of Object.keys(decision)) if (decision[k] === undefined) delete decision[k];
  try {
    const after = await api('POST', '/v1/sessions/' + encodeURIComponent(s.id) + '/decisions', { seq: s.seq, decisions: [decision] });
    sessionChanged(after);
    return after;
  } catch (e) {
    if (e.status === 409) {
      error.textContent = 'Someone else decided first, or the session moved on; the inbox is refreshed.';
      await loadInbox().catch(() => {});
      return null;
    }
    if (e.status === 400 && fieldErrors && fieldErrors(e.message)) return null;
    error.textContent = e.message;
    return null;
  }
}

async function reply(s, text, error) {
  error.textContent = '';
  if (!text.trim()) { error.textContent = 'Write a reply first.'; return; }
  try {
    sessionChanged(await api('POST', '/v1/sessions/' + encodeURIComponent(s.id) + '/messages', { text, seq: s.seq }));
  } catch (e) {
    error.textContent = e.status === 409 ? 'The session moved on; refreshed.' : e.message;
    if (e.status === 409) loadInbox().catch(() => {});
  }
}

// ---------- the arguments editor, generated from the tool's JSON Schema ----------

async function openEditor(s, it, agent, card, error, choice, submit) {
  const old = card.querySelector('form.edit');
  if (old) { old.remove(); return; }
  if ((it.truncated || []).includes('arguments')) {
    // A listing holds a preview of long arguments; the session has them whole.
    try { it = await wholeInterrupt(s, it); } catch (e) { error.textContent = e.message; return; }
  }
  const tool = toolOf(agent, it.tool);
  // A call with a preview shows what the edited arguments would do before
  // anyone approves them (POST …/preview records nothing).
  const preview = it.preview ? async (args, fieldErrors, out) => {
    try {
      const p = await api('POST', '/v1/sessions/' + encodeURIComponent(s.id) + '/interrupts/' + encodeURIComponent(it.id) + '/preview', { arguments: args });
      out.replaceChildren(el('span', { class: 'label' }, 'Preview of these arguments'), previewBody(p));
    } catch (e) { fieldErrors(e.message); }
  } : null;
  schemaForm(card, choice.schema || (tool && tool.parameters) || {}, it.arguments || {}, false, 'Approve with these arguments', submit, preview);
}

// schemaForm adds to card a form generated from a JSON Schema, filled with
// values (and the schema's defaults when useDefaults), that calls submit
// with the object and a function that shows a 400's message at its field.
function schemaForm(card, schema, values, useDefaults, label, submit, preview) {
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const args = values;
  const fields = [];
  const form = el('form', { class: 'edit', novalidate: true });
  for (const [name, p] of Object.entries(props)) {
    const current = name in args ? args[name] : (useDefaults ? p.default : undefined);
    let input;
    const type = Array.isArray(p.type) ? p.type.find((t) => t !== 'null') : p.type;
    if (Array.isArray(p.enum)) {
      input = el('select', { name }, !required.has(name) && el('option', { value: '' }, '—'),
        ...p.enum.map((v) => el('option', { value: JSON.stringify(v), selected: JSON.stringify(v) === JSON.stringify(current) }, String(v))));
    } else if (type === 'boolean') {
      input = el('input', { type: 'checkbox', name, checked: current === true });
    } else if (type === 'integer' || type === 'number') {
      input = el('input', { type: 'number', name, step: type === 'integer' ? '1' : 'any', value: current === undefined ? '' : current });
    } else if (type === 'string') {
      input = el('input', { type: 'text', name, size: 40, value: current === undefined ? '' : current });
    } else {
      input = el('textarea', { name }, current === undefined ? '' : pretty(current));
    }
    const msg = el('span', { class: 'error field-error', dataset: { field: name } });
    fields.push({ name, p, type, input, msg });
    form.append(el('label', {}, el('span', {}, name, required.has(name) ? el('span', { class: 'req', title: 'required' }, ' *') : '',
      p.description ? el('span', { class: 'muted' }, ' — ' + p.description) : ''), input, msg));
    if (p.title) form.lastChild.firstChild.prepend(p.title + ' · ');
  }
  const raw = fields.length ? null : el('textarea', { name: '(arguments)' }, pretty(args));
  if (raw) form.append(el('label', {}, 'arguments (JSON)', raw));
  const formError = el('div', { class: 'error form-error' });
  const previewOut = el('div', { class: 'preview edited-preview' });
  form.append(formError, el('div', { class: 'actions' }, el('button', { class: 'primary', type: 'submit' }, label),
    preview && el('button', { type: 'button', class: 'preview-edit', onclick: async () => {
      formError.textContent = '';
      const value = collect();
      if (value) await preview(value, fieldErrors, previewOut);
    } }, 'Preview'),
    !useDefaults && el('button', { type: 'button', onclick: () => form.remove() }, 'Cancel')), preview && previewOut);

  const collect = () => {
    let ok = true;
    const out = {};
    for (const f of fields) {
      f.msg.textContent = '';
      const v = f.input.type === 'checkbox' ? f.input.checked : f.input.value;
      if (f.input.type !== 'checkbox' && v === '') {
        if (required.has(f.name)) { f.msg.textContent = 'required'; ok = false; }
        continue;
      }
      try {
        if (f.input.tagName === 'SELECT') out[f.name] = JSON.parse(v);
        else if (f.type === 'integer') {
          if (!/^-?\d+$/.test(v)) throw new Error('a whole number');
          out[f.name] = Number(v);
        } else if (f.type === 'number') {
          if (Number.isNaN(Number(v))) throw new Error('a number');
          out[f.name] = Number(v);
        } else if (f.type === 'boolean' || f.type === 'string') out[f.name] = v;
        else out[f.name] = JSON.parse(v);
      } catch (e) {
        f.msg.textContent = 'expected ' + (e.message.startsWith('a ') ? e.message : 'JSON');
        ok = false;
      }
    }
    if (raw) {
      try { return JSON.parse(raw.value); } catch (e) { formError.textContent = 'not valid JSON: ' + e.message; return null; }
    }
    return ok ? out : null;
  };
  // A 400 names the field: "… at /env: value must be one of …".
  const fieldErrors = (message) => {
    const m = /at \/([^:\s/]+)/.exec(message);
    const f = m && fields.find((x) => x.name === m[1]);
    if (f) { f.msg.textContent = message; f.input.focus(); return true; }
    formError.textContent = message;
    return true;
  };
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError.textContent = '';
    const value = collect();
    if (!value) return;
    await submit(value, fieldErrors);
  });
  card.append(form);
  const first = form.querySelector('input, select, textarea');
  if (first) first.focus();
}

// Keyboard: j/k move between items, a approves, r rejects (reason first
// if typed), e edits the focused item.
document.addEventListener('keydown', (e) => {
  if (state.view !== 'inbox' && !state.view.startsWith('session/')) return;
  const t = e.target;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT')) return;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const cards = [...main().querySelectorAll('.item')];
  if (!cards.length) return;
  const card = t && t.classList && t.classList.contains('item') ? t : null;
  const i = card ? cards.indexOf(card) : -1;
  const click = (sel) => { const b = card && card.querySelector(sel); if (b) { e.preventDefault(); b.click(); } };
  switch (e.key) {
    case 'j': e.preventDefault(); cards[Math.min(cards.length - 1, i + 1)].focus(); break;
    case 'k': e.preventDefault(); cards[Math.max(0, i - 1)].focus(); break;
    case 'a': click('button.approve'); break;
    case 'r': click('button.reject'); break;
    case 'e': click('button.edit'); break;
  }
});

// ---------- sessions ----------

async function renderSessions(params) {
  const status = params.get('status') || '';
  const agent = params.get('agent') || '';
  const cursor = params.get('cursor') || '';
  let q = '/v1/sessions?limit=50' + (status ? '&status=' + status : '') + (agent ? '&agent=' + encodeURIComponent(agent) : '') +
    (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
  const page = await api('GET', q);
  const rows = page.sessions;
  const nav = (k, v) => { const p = new URLSearchParams(params); if (v) p.set(k, v); else p.delete(k); if (k !== 'cursor') p.delete('cursor'); location.hash = '#/sessions?' + p; };
  main().replaceChildren(
    el('h2', {}, 'Sessions'),
    el('div', { class: 'filters' },
      el('select', { id: 'filter-status', onchange: (e) => nav('status', e.target.value) }, el('option', { value: '' }, 'every status'),
        ...['running', 'paused', 'completed', 'failed', 'cancelled'].map((v) => el('option', { value: v, selected: v === status }, v))),
      el('select', { id: 'filter-session-agent', onchange: (e) => nav('agent', e.target.value) }, el('option', { value: '' }, 'every agent'),
        ...state.agents.map((a) => el('option', { value: a.name, selected: a.name === agent }, a.name)))),
    el('table', { id: 'sessions' }, el('tr', {}, el('th', {}, 'session'), el('th', {}, 'agent'), el('th', {}, 'status'), el('th', {}, 'last activity'), el('th', {}, 'output')),
      ...rows.map((s) => el('tr', {}, el('td', {}, el('a', { href: '#/sessions/' + s.id }, s.id)), el('td', {}, s.agent),
        el('td', { class: 'status status-' + s.status }, s.status), el('td', {}, ago(s.updated_at)), el('td', {}, (s.output || '').slice(0, 80))))),
    rows.length ? '' : el('p', { class: 'muted' }, 'No sessions here.'),
    el('div', { class: 'actions' }, cursor && el('button', { onclick: () => nav('cursor', '') }, 'First page'),
      page.next_cursor && el('button', { id: 'next-page', onclick: () => nav('cursor', page.next_cursor) }, 'Next page')));
}

// ---------- standing rules ----------

async function renderRules(params) {
  const all = params.get('all') === 'true';
  const rules = (await api('GET', '/v1/rules' + (all ? '?all=true' : ''))).rules;
  const error = el('p', { class: 'error' });
  const revoke = async (r) => {
    error.textContent = '';
    try {
      await api('DELETE', '/v1/rules/' + encodeURIComponent(r.id));
      await renderRules(params);
    } catch (e) { error.textContent = e.message; }
  };
  const standing = (r) => r.revoked_at ? 'revoked ' + ago(r.revoked_at) + (r.revoked_by ? ' by ' + (r.revoked_by.name || '') : '')
    : r.expires_at && new Date(r.expires_at) <= new Date() ? 'expired' : r.expires_at ? 'until ' + new Date(r.expires_at).toLocaleString() : 'no expiry';
  main().replaceChildren(
    el('h2', {}, 'Standing rules'),
    el('p', { class: 'muted' }, 'Each decides the matching calls of a tool without asking, for whoever granted it. ',
      el('a', { href: all ? '#/rules' : '#/rules?all=true', id: 'rules-all' }, all ? 'Live rules only' : 'With revoked and expired')),
    error,
    el('table', { id: 'rules' }, el('tr', {}, ...['rule', 'decides', 'condition', 'scope', 'granted by', 'uses', 'state', ''].map((h) => el('th', {}, h))),
      ...rules.map((r) => el('tr', { 'data-rule': r.id }, el('td', {}, r.id), el('td', {}, r.action + ' ' + r.tool + (r.agent ? ' of ' + r.agent : '')),
        el('td', {}, el('code', {}, r.if || 'every call')), el('td', {}, r.scope + (r.scope === 'session' ? ' ' + r.session_id : '')),
        el('td', {}, (r.granted_by && r.granted_by.name) || 'the program', ' ', ago(r.granted_at)), el('td', { class: 'uses' }, String(r.uses)),
        el('td', { class: 'rule-state' }, standing(r)),
        el('td', {}, r.revoked_at ? '' : el('button', { class: 'danger revoke', onclick: () => revoke(r) }, 'Revoke'))))),
    rules.length ? '' : el('p', { class: 'muted' }, 'No standing rules.'));
}

// ---------- analytics ----------

// renderAnalytics draws GET /v1/analytics: a table per tool, agent or
// approver, and two plots (decisions by outcome, time to decision), drawn
// as SVG by hand: a few bars need no library.
async function renderAnalytics(params) {
  const by = params.get('by') || 'tool';
  const days = params.get('days') || '30';
  const since = days === 'all' ? '' : '&since=' + new Date(Date.now() - Number(days) * 86400e3).toISOString().replace(/\.\d+Z$/, 'Z');
  const a = await api('GET', '/v1/analytics?by=' + encodeURIComponent(by) + since);
  const nav = (k, v) => { const p = new URLSearchParams(params); p.set(k, v); location.hash = '#/analytics?' + p; };
  const secs = (ms) => ms >= 60000 ? (ms / 60000).toFixed(1) + ' min' : (ms / 1000).toFixed(1) + ' s';
  const heads = [by, 'pending', 'decisions', 'approved', 'rejected', 'edited', 'expired', 'by rule', 'p50', 'p90', 'fast (< ' + secs(a.read_time_ms) + ')', 'longest streak'];
  main().replaceChildren(
    el('h2', {}, 'Approval analytics'),
    el('div', { class: 'filters' },
      el('select', { id: 'analytics-by', onchange: (e) => nav('by', e.target.value) }, ...['tool', 'agent', 'approver'].map((v) => el('option', { value: v, selected: v === by }, 'by ' + v))),
      el('select', { id: 'analytics-days', onchange: (e) => nav('days', e.target.value) }, ...['1', '7', '30', '90', 'all'].map((v) => el('option', { value: v, selected: v === days }, v === 'all' ? 'all time' : 'last ' + v + ' days')))),
    plot('Decisions', a.rows, [['approved', '#3a7d44'], ['rejected', '#b03a2e'], ['expired', '#888']], (v) => String(v)),
    plot('Time to decision (median, 90th percentile)', a.rows.map((r) => ({ key: r.key, p50: r.time_to_decision_ms.p50, p90: r.time_to_decision_ms.p90 })), [['p50', '#2e6da4'], ['p90', '#9ec1e6']], secs, true),
    el('table', { id: 'analytics' }, el('tr', {}, ...heads.map((h) => el('th', {}, h))),
      ...a.rows.map((r) => el('tr', { 'data-key': r.key }, el('td', {}, r.key || '(none)'), ...[r.pending, r.decisions, r.approved, r.rejected, r.edited, r.expired, r.by_rule].map((n) => el('td', {}, String(n))),
        el('td', {}, secs(r.time_to_decision_ms.p50)), el('td', {}, secs(r.time_to_decision_ms.p90)),
        el('td', { class: r.fast_approvals ? 'warn' : '' }, String(r.fast_approvals)), el('td', {}, String(r.longest_streak))))),
    a.rows.length ? '' : el('p', { class: 'muted' }, 'No approvals were decided in this range.'),
    el('p', { class: 'muted' }, 'Fast approvals and long streaks are rubber-stamp signals: see docs/analytics.md for every figure.'));
}

// plot draws rows as horizontal bars, one group per row: stacked series
// (each [field, colour]), or side by side when grouped.
function plot(title, rows, series, label, grouped) {
  const NS = 'http://www.w3.org/2000/svg';
  const svg = (tag, attrs, text) => { const n = document.createElementNS(NS, tag); for (const k in attrs) n.setAttribute(k, attrs[k]); if (text !== undefined) n.textContent = visibleText(String(text)); return n; };
  const width = 640, left = 160, bar = 14, gap = 8;
  const per = grouped ? series.length : 1;
  const height = rows.length * (per * bar + gap) + gap;
  const total = (r) => grouped ? Math.max(...series.map(([f]) => r[f])) : series.reduce((n, [f]) => n + r[f], 0);
  const max = Math.max(1, ...rows.map(total));
  const g = svg('svg', { class: 'plot', width, height, viewBox: '0 0 ' + width + ' ' + height, role: 'img', 'aria-label': title });
  rows.forEach((r, i) => {
    const y = gap + i * (per * bar + gap);
    g.append(svg('text', { x: left - 6, y: y + bar - 3, 'text-anchor': 'end', 'font-size': 11 }, r.key || '(none)'));
    let x = left;
    series.forEach(([f, colour], j) => {
      const w = (width - left - 60) * r[f] / max;
      const yy = grouped ? y + j * bar : y;
      g.append(svg('rect', { x: grouped ? left : x, y: yy, width: w, height: bar - 2, fill: colour, 'data-series': f }));
      if (grouped) g.append(svg('text', { x: left + w + 4, y: yy + bar - 4, 'font-size': 10 }, label(r[f])));
      x += grouped ? 0 : w;
    });
    if (!grouped) g.append(svg('text', { x: x + 4, y: y + bar - 4, 'font-size': 10 }, label(total(r))));
  });
  return el('figure', { class: 'plot' }, el('figcaption', {}, title + ' — ' + series.map(([f]) => f).join(', ')), g);
}

// ---------- one session ----------

const MAX_DEPTH = 8; // deeper frames are drawn at this depth (app.css has .depth-0 … .depth-8)

// PAST is each decision's action as the timeline says it.
const PAST = { approve: 'approved', reject: 'rejected', answer: 'answered', edit: 'edited the answer of', complete: 'completed', fail: 'failed' };
const POPPED = { completed: 'finished', failed: 'failed', cancelled: 'was cancelled' };

// eventLine is an event as the conversation shows it, in people's words;
// names maps frame ids to their agents, and said the text each frame's
// model last wrote (an interactive agent's message repeats it).
function eventLine(ev, depth, names, said) {
  const d = ev.data || {};
  // Indented by class, not a style attribute: the page's CSP allows no inline style.
  const row = (who, ...body) => el('div', { class: 'row depth-' + Math.min(depth, MAX_DEPTH), dataset: { frame: ev.frame || '', seq: ev.seq, depth } },
    el('span', { class: 'who' }, who), ...body);
  switch (ev.type) {
    case 'user_message': return row('user', d.text);
    case 'model_response': {
      const m = d.message || {};
      said.set(ev.frame, m.content || '');
      return row(ev.agent, m.content || '', ...(m.tool_calls || []).map((c) => el('pre', {}, '→ ' + c.name + ' ' + c.arguments)));
    }
    case 'tool_result': return row(d.tool + ' result', el('span', { class: d.is_error ? 'error' : '' }, d.content));
    case 'frame_pushed': return row('', el('button', { class: 'toggle', title: 'collapse', dataset: { child: d.frame }, onclick: (e) => toggleFrame(e.target) }, '▾'),
      el('span', { class: 'frame' }, ev.agent + ' started ' + d.agent + ' (' + d.mode + ')'));
    case 'frame_popped': return row('', el('span', { class: 'frame' }, (names.get(d.frame) || 'the sub-agent') + ' ' + (POPPED[d.reason] || d.reason) + (d.result ? ': ' + d.result : '')));
    case 'handoff': return row('', el('span', { class: 'frame' }, ev.agent + ' handed the conversation to ' + d.agent));
    case 'agent_message': return said.get(ev.frame) === d.text ? null : row(ev.agent, d.text); // shown with its model_response
    case 'approval_requested': return row('', el('span', { class: 'frame' }, 'waits for approval: ' + (d.interrupt && d.interrupt.message)));
    case 'input_requested': return row('', el('span', { class: 'frame' }, 'asks: ' + (d.interrupt && d.interrupt.question)));
    case 'decision': {
      const who = d.actor && d.actor.name;
      let what = (PAST[d.action] || d.action) + (d.tool ? ' ' + d.tool : '');
      if (d.rule && d.rule.startsWith('rul_')) what += ' by standing rule ' + d.rule;
      if (d.granted_rule) what += ' and granted standing rule ' + d.granted_rule.id;
      return row('', el('span', { class: 'frame' }, who ? who + ' ' + what : what[0].toUpperCase() + what.slice(1)));
    }
    case 'interrupt_reminded': return row('', el('span', { class: 'frame' }, 'reminded who may decide ' + d.tool));
    case 'interrupt_escalated': return row('', el('span', { class: 'frame' }, (d.hand_over ? 'handed ' : 'escalated ') + d.tool + ' to ' + (d.escalate_to || []).join(', ')));
    case 'turn_paused': return row('', el('span', { class: 'frame' }, 'paused'), forkButton(ev));
    case 'turn_completed': return row('', el('span', { class: 'frame' }, 'turn completed'), forkButton(ev));
    case 'turn_failed': return row('', el('span', { class: 'error' }, 'turn failed: ' + (d.error && d.error.message)), forkButton(ev));
    case 'turn_cancelled': return row('', el('span', { class: 'frame' }, 'turn cancelled'), forkButton(ev));
    case 'session_forked': return row('', el('span', { class: 'frame' }, 'a fork of ', el('a', { href: '#/sessions/' + d.from.session_id }, d.from.session_id), ' at ' + d.from.seq), forkButton(ev));
    case 'definition_changed': return row('', el('span', { class: 'frame' }, 'goes on under the agent\'s new definition ' + shortHash(d.to) + ' (was ' + shortHash(d.from) + ')'));
    default: return null;
  }
}

// shortHash is a definition's hash as people compare them: its first twelve
// hex digits (cairn sessions show writes the same).
function shortHash(h) {
  return (h || '').replace(/^sha256:/, '').slice(0, 12);
}

// forkButton, on an event where the session paused or waited for a
// message, starts a fork there (POST …/fork: a copy of the log up to it,
// nothing run again) and opens it, to decide or write differently.
function forkButton(ev) {
  const id = state.view.startsWith('session/') ? state.view.slice('session/'.length) : '';
  if (!id || !ev.seq) return null;
  const error = el('span', { class: 'error' });
  const btn = el('button', { type: 'button', class: 'fork', dataset: { seq: ev.seq }, title: 'a new session from this point: decide differently, or write another message; this one stays as it is',
    onclick: async () => {
      error.textContent = '';
      try {
        const fork = await api('POST', '/v1/sessions/' + encodeURIComponent(id) + '/fork', { seq: ev.seq });
        location.hash = '#/sessions/' + encodeURIComponent(fork.id);
      } catch (e) { error.textContent = e.message; }
    } }, 'try another way from here');
  return el('span', { class: 'fork-point' }, ' ', btn, error);
}

function toggleFrame(btn) {
  const child = btn.dataset.child;
  const hide = btn.textContent === '▾';
  btn.textContent = hide ? '▸' : '▾';
  const frames = new Set([child]);
  for (const row of document.querySelectorAll('#timeline .row')) {
    if (frames.has(row.dataset.frame)) {
      row.classList.toggle('collapsed', hide);
      const inner = row.querySelector('.toggle');
      if (inner) frames.add(inner.dataset.child);
    }
  }
}

function auditRow(ev) {
  const d = ev.data;
  const when = el('td', {}, new Date(ev.time).toLocaleTimeString());
  if (ev.type !== 'decision') { // a step of the interrupt's schedule: the escalation history
    const what = ev.type === 'interrupt_reminded' ? 'reminded ' + d.tool : (d.hand_over ? 'handed ' : 'escalated ') + d.tool + ' to ' + (d.escalate_to || []).join(', ');
    return el('tr', { class: 'escalation' }, when, el('td', {}, 'cairn (schedule)'), el('td', {}, what), el('td', {}, ''), el('td', {}, 'rule ' + d.rule));
  }
  const who = d.actor ? (d.actor.name || 'no name') + (d.actor.role ? ' (' + d.actor.role + ')' : '') : '';
  return el('tr', {}, when, el('td', {}, who), el('td', {}, d.action + ' ' + (d.tool || '') + (d.remember ? ' [remember ' + d.remember + ']' : '')),
    el('td', {}, d.arguments !== undefined ? el('pre', {}, pretty(d.arguments)) : '', d.new_arguments !== undefined ? el('pre', { class: 'edited' }, '→ ' + pretty(d.new_arguments)) : ''),
    el('td', {}, (d.reason || d.text || '') + (d.rule ? ' (rule ' + d.rule + ')' : '')));
}

async function renderSession(id, signal) {
  let s = await api('GET', '/v1/sessions/' + encodeURIComponent(id));
  const timeline = el('div', { class: 'timeline panel', id: 'timeline' });
  const audit = el('table', { id: 'audit' }, el('tr', {}, el('th', {}, 'time'), el('th', {}, 'who'), el('th', {}, 'decision'), el('th', {}, 'arguments'), el('th', {}, 'reason / answer')));
  const head = el('div', { class: 'panel', id: 'session-head' });
  const pending = el('div', { id: 'pending' });
  const record = el('p', { id: 'record', class: 'muted' });
  const error = el('div', { class: 'error' });
  const text = el('textarea', { id: 'message', placeholder: 'your next message' });
  const depth = new Map();
  const names = new Map(); // frame id → agent
  const said = new Map(); // frame id → its model's last text
  const note = el('p', { class: 'muted', id: 'send-note' });
  let cards = new Map();
  let last = 0;

  const paint = () => {
    head.replaceChildren(
      el('h2', {}, s.id), el('p', {}, 'agent ', el('b', {}, s.agent), ' · ', el('span', { class: 'status status-' + s.status, id: 'session-status' }, s.status), ' · updated ', ago(s.updated_at)),
      s.definition ? el('p', { class: 'muted', id: 'definition', title: s.definition.hash }, 'version ', el('code', {}, shortHash(s.definition.hash)),
        s.definition.current ? ' · the agent\'s current definition' : ' · not the current definition: the configuration changed since the session started') : '',
      s.forked_from ? el('p', { class: 'muted', id: 'forked-from' }, 'a fork of ', el('a', { href: '#/sessions/' + s.forked_from.session_id }, s.forked_from.session_id), ' at event ' + s.forked_from.seq) : '',
      s.stack.length > 1 ? el('p', { class: 'stack' }, 'talking with: ', ...s.stack.map((f) => el('span', {}, f.agent))) : '',
      s.error ? el('p', { class: 'error' }, s.error.message) : '',
      el('div', { class: 'actions' },
        el('button', { id: 'cancel-top', disabled: s.stack.length < 2, onclick: () => cancel('top') }, 'Cancel top'),
        el('button', { class: 'danger', id: 'cancel-all', disabled: s.status === 'completed' || s.status === 'cancelled' || s.status === 'failed', onclick: () => cancel('all') }, 'Cancel all')));
    // Keep the cards already shown (with what was typed in them).
    const keep = new Map();
    pending.replaceChildren(...(s.status === 'paused' ? s.interrupts.map((it) => {
      const key = it.id + '/' + s.seq;
      const card = cards.get(key) || interruptCard(s, it, interruptAgent(s, it));
      keep.set(key, card);
      return card;
    }) : []));
    cards = keep;
    // The next message waits for the decisions: say so, instead of a 409.
    const deciding = s.status === 'paused' && s.interrupts.some((it) => !(it.ask && it.ask.reply));
    const replying = s.status === 'paused' && s.interrupts.some((it) => it.ask && it.ask.reply);
    text.disabled = sendBtn.disabled = deciding || s.status === 'running' || !canSpeak(s);
    text.placeholder = replying ? 'your reply to ' + s.stack[s.stack.length - 1].agent : 'your next message';
    note.textContent = !canSpeak(s) ? 'Only the session\'s owner writes here.'
      : deciding ? 'Decide what waits above first; then you can write again.'
      : s.status === 'running' ? 'The agent is working; you can write when it answers.' : '';
  };
  const add = (ev) => {
    if (ev.seq && ev.seq <= last) return;
    if (ev.seq) last = ev.seq;
    if (ev.type === 'frame_pushed') { depth.set(ev.data.frame, (depth.get(ev.frame) || 0) + 1); names.set(ev.data.frame, ev.data.agent); }
    if (ev.type === 'handoff') depth.set(ev.data.to, depth.get(ev.data.from) || 0);
    const line = eventLine(ev, depth.get(ev.frame) || 0, names, said);
    if (line) timeline.append(line);
    if (ev.type === 'decision' || ev.type === 'interrupt_reminded' || ev.type === 'interrupt_escalated') audit.append(auditRow(ev));
  };
  const cancel = async (scope) => {
    error.textContent = '';
    try { s = await api('POST', '/v1/sessions/' + encodeURIComponent(id) + '/cancel', { scope }); paint(); } catch (e) { error.textContent = e.message; }
  };
  const send = async () => {
    error.textContent = '';
    if (!text.value.trim()) return;
    try { s = await api('POST', '/v1/sessions/' + encodeURIComponent(id) + '/messages', { text: text.value }); text.value = ''; paint(); } catch (e) { error.textContent = e.message; }
  };
  // What the record proves (docs/audit.md): how far the chain holds, the
  // last signed checkpoint; read again as the session moves.
  const paintRecord = async () => {
    try {
      const a = await api('GET', '/v1/sessions/' + encodeURIComponent(id) + '/audit');
      record.className = a.broken ? 'error' : 'muted';
      record.textContent = 'Record: ' + a.summary;
    } catch (e) { record.textContent = ''; }
  };
  const sendBtn = el('button', { class: 'primary', id: 'send', onclick: () => send() }, 'Send');
  const evs = await api('GET', '/v1/sessions/' + encodeURIComponent(id) + '/events');
  evs.events.forEach(add);
  paint();
  main().replaceChildren(head, pending, el('div', { class: 'grid2' },
    el('section', {}, el('h3', {}, 'Conversation'), timeline,
      el('div', { class: 'panel' }, text, note, el('div', { class: 'actions' }, sendBtn, error))),
    el('section', {}, el('h3', {}, 'Audit trail'), record, audit)));
  paintRecord();
  let refresh = null;
  follow(() => '/v1/sessions/' + encodeURIComponent(id) + '/events?after=' + last, (type, ev) => {
    if (type === 'open' || !ev || !ev.seq) return;
    add(ev);
    clearTimeout(refresh);
    refresh = setTimeout(async () => { try { s = await api('GET', '/v1/sessions/' + encodeURIComponent(id)); paint(); paintRecord(); } catch (e) { /* next event */ } }, 50);
  }, signal);
}

async function renderNew() {
  // A direct agent takes calls (approval requests, the gateway), not a first message.
  const agent = el('select', { id: 'new-agent' }, ...state.agents.filter((a) => !a.direct).map((a) => el('option', { value: a.name }, a.name)));
  const input = el('textarea', { id: 'new-input', placeholder: 'the first message' });
  const error = el('div', { class: 'error' });
  main().replaceChildren(el('h2', {}, 'New session'), el('div', { class: 'panel' }, el('label', {}, 'agent ', agent), input,
    el('div', { class: 'actions' }, el('button', { class: 'primary', id: 'start', onclick: async () => {
      error.textContent = '';
      try {
        const s = await api('POST', '/v1/sessions', { agent: agent.value, input: input.value, wait: false });
        location.hash = '#/sessions/' + s.id;
      } catch (e) { error.textContent = e.message; }
    } }, 'Start'), error)));
  input.focus();
}

// ---------- routing ----------

async function route() {
  if (!state.me) return;
  if (state.stop) state.stop.abort();
  state.stop = new AbortController();
  const [path, query] = (location.hash.slice(1) || '/inbox').split('?');
  const params = new URLSearchParams(query || '');
  const parts = path.split('/').filter(Boolean);
  for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', a.getAttribute('href') === '#/' + parts[0]);
  try {
    if (parts[0] === 'sessions' && parts[1]) { state.view = 'session/' + parts[1]; await renderSession(parts[1], state.stop.signal); }
    else if (parts[0] === 'sessions') { state.view = 'sessions'; await renderSessions(params); }
    else if (parts[0] === 'new') { state.view = 'new'; await renderNew(); }
    else if (parts[0] === 'rules') { state.view = 'rules'; await renderRules(params); }
    else if (parts[0] === 'analytics') { state.view = 'analytics'; await renderAnalytics(params); }
    else { state.view = 'inbox'; renderInbox(); }
  } catch (e) {
    if (e.status !== 401) main().replaceChildren(el('p', { class: 'error' }, e.message));
  }
  updateCount();
}

async function start() {
  try {
    state.me = await api('GET', '/v1/me');
  } catch (e) {
    showLogin(state.token ? 'That token was refused. Paste another one.' : undefined);
    return;
  }
  document.getElementById('whoami').replaceChildren(state.me.auth ? (state.me.display_name || state.me.name) + ' (' + state.me.role + (state.me.all_tenants ? ', every tenant' : state.me.tenant ? ', ' + state.me.tenant : '') + ') ' : 'no auth (loopback) ',
    state.me.auth ? el('button', { onclick: signOut }, 'Sign out') : '');
  document.getElementById('nav-new').hidden = false;
  document.getElementById('nav-rules').hidden = !canDecide();
  document.getElementById('nav-analytics').hidden = !canDecide();
  state.agents = (await api('GET', '/v1/agents')).agents;
  startFeed();
  await route();
}

window.addEventListener('hashchange', route);
setInterval(() => {
  for (const x of document.querySelectorAll('.expiry')) x.textContent = countdown(x.dataset.at);
}, 1000);
start();
