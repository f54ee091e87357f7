// filo's session viewer: shows the path to the entry picked in the sidebar tree. Every entry is
// already in the page (rendered and escaped when the file was written); this script only shows,
// hides, opens and closes elements. It never builds markup from session text.
(() => {
  'use strict';
  const root = document.documentElement;
  const tree = document.getElementById('tree');
  const search = document.getElementById('search');
  const status = document.getElementById('tree-status');
  const nodes = Array.from(tree.querySelectorAll('a.node'));
  const byId = new Map();
  const kids = new Map();
  for (const n of nodes) {
    byId.set(n.dataset.id, n);
    const p = n.dataset.parent;
    if (p) {
      if (!kids.has(p)) kids.set(p, []);
      kids.get(p).push(n.dataset.id);
    }
  }
  const sections = new Map();
  for (const s of document.querySelectorAll('#messages > section[data-id]')) sections.set(s.dataset.id, s);
  const results = new Map();
  for (const d of document.querySelectorAll('details.tool[data-result-id]')) results.set(d.dataset.resultId, d);

  let leaf = null;
  let onPath = new Set();
  let selected = null;
  let filter = 'default';

  const parentOf = (id) => {
    const n = byId.get(id);
    return n && n.dataset.parent ? n.dataset.parent : null;
  };
  const pathTo = (id) => {
    const out = [];
    const seen = new Set();
    while (id && byId.has(id) && !seen.has(id)) {
      seen.add(id);
      out.push(id);
      id = parentOf(id);
    }
    return out.reverse();
  };
  // The newest entry below `id`, following the last child at each step.
  const newestLeaf = (id) => {
    const seen = new Set();
    while (kids.has(id) && !seen.has(id)) {
      seen.add(id);
      const k = kids.get(id);
      id = k[k.length - 1];
    }
    return id;
  };
  // What shows an entry in the page: its section, the tool call holding its result, or the
  // nearest ancestor that has one (labels and settings have no section).
  const targetOf = (id) => {
    const seen = new Set();
    while (id && !seen.has(id)) {
      seen.add(id);
      if (sections.has(id)) return sections.get(id);
      if (results.has(id)) return results.get(id);
      id = parentOf(id);
    }
    return null;
  };

  // Show the path through `id`: the current one if `id` is on it, else the path to the newest
  // entry below `id` (or to `toLeaf` when given).
  const select = (id, scroll, toLeaf) => {
    if (!byId.has(id)) return false;
    leaf = toLeaf || (onPath.has(id) ? leaf : newestLeaf(id));
    onPath = new Set(pathTo(leaf));
    for (const [sid, s] of sections) s.hidden = !onPath.has(sid);
    for (const n of nodes) {
      n.classList.toggle('on-path', onPath.has(n.dataset.id));
      n.classList.remove('selected');
      n.removeAttribute('aria-current');
    }
    const node = byId.get(id);
    node.classList.add('selected');
    node.setAttribute('aria-current', 'true');
    selected = id;
    root.dataset.selected = id;
    root.dataset.leaf = leaf;
    for (const t of document.querySelectorAll('.target')) t.classList.remove('target');
    const target = targetOf(id);
    if (target) {
      if (target.tagName === 'DETAILS') target.open = true;
      const card = target.closest('section') || target;
      card.classList.add('target');
      if (scroll) target.scrollIntoView({ block: 'center' });
    }
    node.scrollIntoView({ block: 'nearest' });
    applyFilter();
    return true;
  };

  const hashId = () => {
    const m = /^#select=(.*)$/.exec(location.hash);
    if (!m) return null;
    try {
      return decodeURIComponent(m[1]);
    } catch (e) {
      return null;
    }
  };
  const go = (id, replace) => {
    const href = byId.get(id).getAttribute('href');
    if (location.hash !== href) history[replace ? 'replaceState' : 'pushState'](null, '', href);
    select(id, true);
  };
  const fromHash = () => {
    const id = hashId();
    if (id !== null && id !== selected) select(id, true);
  };
  window.addEventListener('hashchange', fromHash);
  window.addEventListener('popstate', fromHash);

  // Filters and search decide which tree rows show; the selected row always does.
  const texts = new Map();
  const textOf = (n) => {
    const id = n.dataset.id;
    if (!texts.has(id)) {
      const s = sections.get(id) || results.get(id);
      texts.set(id, (n.textContent + ' ' + (s ? s.textContent : '')).toLowerCase());
    }
    return texts.get(id);
  };
  const passes = (n) => {
    const kind = n.dataset.kind;
    if (filter === 'user' && kind !== 'user') return false;
    if (filter === 'labeled' && !n.hasAttribute('data-labeled')) return false;
    if (filter === 'no-tools' && (kind === 'tool' || kind === 'setting')) return false;
    if (filter === 'default' && kind === 'setting') return false;
    const words = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    return words.every((w) => textOf(n).includes(w));
  };
  function applyFilter() {
    let shown = 0;
    for (const n of nodes) {
      const ok = n.dataset.id === selected || passes(n);
      n.classList.toggle('filtered', !ok);
      if (ok) shown += 1;
    }
    status.textContent = shown + ' of ' + nodes.length + ' entries · ' + onPath.size + ' on this path';
  }
  search.addEventListener('input', applyFilter);
  for (const b of document.querySelectorAll('[data-filter]')) {
    b.addEventListener('click', () => {
      filter = b.dataset.filter;
      for (const o of document.querySelectorAll('[data-filter]')) o.classList.toggle('active', o === b);
      applyFilter();
    });
  }

  const move = (step) => {
    const visible = nodes.filter((n) => !n.classList.contains('filtered'));
    if (visible.length === 0) return;
    const at = visible.indexOf(byId.get(selected));
    const next = at < 0 ? 0 : Math.max(0, Math.min(visible.length - 1, at + step));
    go(visible[next].dataset.id, true);
    visible[next].focus({ preventScroll: true });
  };
  // Open every block of a kind in the shown path, or close them all if any is open.
  const toggleAll = (kind) => {
    const all = Array.from(document.querySelectorAll('#messages details.' + kind));
    const open = !all.some((d) => d.open && !d.closest('[hidden]'));
    for (const d of all) d.open = open;
  };
  for (const b of document.querySelectorAll('[data-toggle]')) {
    b.addEventListener('click', () => toggleAll(b.dataset.toggle));
  }

  tree.addEventListener('click', (e) => {
    const a = e.target.closest('a.node');
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    go(a.dataset.id, false);
  });
  document.getElementById('messages').addEventListener('click', (e) => {
    if (e.target.matches('img.image')) e.target.classList.toggle('zoomed');
  });
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target === search) {
      if (e.key === 'Escape') {
        search.value = '';
        applyFilter();
        search.blur();
      } else if (e.key === 'Enter' || e.key === 'ArrowDown') {
        e.preventDefault();
        search.blur();
        move(1);
      }
      return;
    }
    if (e.target.closest('input, textarea, select, [contenteditable]')) return;
    const actions = {
      ArrowDown: () => move(1),
      j: () => move(1),
      ArrowUp: () => move(-1),
      k: () => move(-1),
      Home: () => move(-nodes.length),
      End: () => move(nodes.length),
      '/': () => search.focus(),
      t: () => toggleAll('thinking'),
      o: () => toggleAll('tool'),
    };
    const action = actions[e.key];
    if (action) {
      e.preventDefault();
      action();
    }
  });

  const first = hashId();
  if (first === null || !select(first, true)) {
    const start = tree.dataset.leaf;
    if (start && byId.has(start)) select(start, false, start);
    else applyFilter();
  }
  root.dataset.viewer = 'ready';
})();
