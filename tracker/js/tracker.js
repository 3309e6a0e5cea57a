/*
 * tributary.js: the browser library of the Tributary tracker.
 *
 * The page pastes the snippet (docs/tracker.md), which defines
 * window.tributary = {writeKey, host, q: [calls made before this file
 * loaded]} and loads this file with async. This file then replaces the
 * stub's methods with real ones and replays the queued calls.
 *
 * Delivery is at least once. An event stays in the queue (in memory and,
 * when localStorage works, in storage under trb_q:<page id>) until the
 * collector answered a 2xx or a permanent 4xx for it. Failures are retried
 * with exponential backoff; a page that goes away hands what is left to
 * navigator.sendBeacon, and whatever the beacon could not take stays in
 * storage for the next page of the site to send. So an event can be sent
 * twice: the collector drops the second copy by messageId.
 *
 * Requests are text/plain POSTs to /v1/batch with the write key in the body:
 * a CORS "simple" request, so neither fetch nor sendBeacon (which cannot set
 * headers) needs a preflight.
 *
 * ES5 on purpose (no build step for old browsers); scripts/tracker-js.sh
 * minifies it to tracker.min.js, which is what /tracker.js serves.
 */
(function (w, d, nav) {
  'use strict';
  var VERSION = '1.0.0',
    P = 'trb_',
    QP = P + 'q:',
    t = w.tributary = w.tributary || {};
  if (t.initialized) return;
  t.initialized = true;

  var script = d.currentScript,
    key = t.writeKey || (script && script.getAttribute('data-write-key')),
    // Events go where tracker.js came from unless the snippet says otherwise.
    host = (t.host || (script ? script.src.replace(/\/[^\/]*$/, '') : '')).replace(/\/$/, ''),
    url = host + '/v1/batch',
    flushAt = t.flushAt || 20,
    interval = t.flushInterval == null ? 100 : t.flushInterval,
    maxQueue = t.maxQueue || 1000,
    store = storage(),
    pid = uuid(),
    queue = [], // events not yet acknowledged, oldest first
    inflight = 0, // queue[0:inflight] is being sent by fetch
    attempts = 0, // failed sends in a row, for the backoff
    gone = 0, // 1: the page is hidden, 2: it is going away; either way, send at once by beacon
    timer = 0;

  function uuid() {
    var c = w.crypto;
    if (c && c.randomUUID) return c.randomUUID();
    return '10000000-1000-4000-8000-100000000000'.replace(/[018]/g, function (x) {
      return (x ^ ((c ? c.getRandomValues(new Uint8Array(1))[0] : Math.random() * 256) & (15 >> (x / 4)))).toString(16);
    });
  }

  // storage is localStorage if it works: Safari's private mode and some
  // privacy settings make it throw.
  function storage() {
    try {
      var s = w.localStorage;
      s.setItem(P, 1);
      s.removeItem(P);
      return s;
    } catch (e) {}
  }

  // get and set keep the ids: in localStorage, else in a first-party cookie.
  function get(k) {
    if (store) return store.getItem(P + k);
    var m = d.cookie.match('(?:^|; )' + P + k + '=([^;]*)');
    return m && decodeURIComponent(m[1]);
  }

  function set(k, v) {
    if (store) return v == null ? store.removeItem(P + k) : store.setItem(P + k, v);
    d.cookie = P + k + '=' + (v == null ? ';max-age=0' : encodeURIComponent(v) + ';max-age=63072000') + ';path=/;SameSite=Lax';
  }

  function anonymousId() {
    var a = get('aid');
    if (!a) set('aid', (a = uuid()));
    return a;
  }

  function pageInfo() {
    var l = w.location;
    return { url: l.href.split('#')[0], path: l.pathname, referrer: d.referrer, title: d.title, search: l.search };
  }

  function event(type, fields) {
    var e = {
        type: type,
        messageId: uuid(),
        anonymousId: anonymousId(),
        timestamp: new Date().toISOString(),
        context: { page: pageInfo(), library: { name: 'tributary.js', version: VERSION }, locale: nav.language }
      },
      u = get('uid'),
      k;
    if (u) e.userId = u;
    try {
      e.context.timezone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    } catch (x) {}
    for (k in fields) e[k] = fields[k];
    return e;
  }

  // save mirrors the queue into storage; left marks it as left by a page
  // that is going away, for the next page to take over at once.
  function save(left) {
    if (!store) return;
    try {
      if (queue.length) store.setItem(QP + pid, JSON.stringify({ t: +new Date(), h: left ? 1 : 0, q: queue }));
      else store.removeItem(QP + pid);
    } catch (e) {}
  }

  // reclaim takes over the queues of pages that went away, or of tabs not
  // heard from for a minute (a crash, or a tab that will send them too:
  // the collector drops the duplicates).
  function reclaim() {
    if (!store) return;
    try {
      var keys = [],
        i,
        o;
      for (i = 0; i < store.length; i++) if (store.key(i).indexOf(QP) == 0) keys.push(store.key(i));
      for (i = 0; i < keys.length; i++) {
        o = JSON.parse(store.getItem(keys[i]));
        if (o.h || new Date() - o.t > 6e4) {
          store.removeItem(keys[i]);
          queue = queue.concat(o.q);
        }
      }
      queue = queue.slice(-maxQueue);
    } catch (e) {}
  }

  // chunk is the batch that starts at queue[from]: at most flushAt events
  // and about 16,000 characters (48 KB at worst in UTF-8), below the 64 KB
  // that sendBeacon and keepalive fetches may carry.
  function chunk(from) {
    var out = [],
      size = 0,
      n;
    while (from < queue.length && out.length < flushAt) {
      n = JSON.stringify(queue[from]).length;
      if (out.length && size + n > 16e3) break;
      size += n;
      out.push(queue[from++]);
    }
    return out;
  }

  function body(batch) {
    var now = new Date().toISOString();
    for (var i = 0; i < batch.length; i++) batch[i].sentAt = now;
    return JSON.stringify({ batch: batch, sentAt: now, writeKey: key });
  }

  function schedule(ms) {
    if (timer || inflight || !queue.length) return;
    timer = setTimeout(flush, ms);
  }

  function flush() {
    timer = 0;
    if (inflight || !queue.length) return;
    var b = chunk(0),
      s = body(b);
    inflight = b.length;
    if (!w.fetch) return done(nav.sendBeacon && nav.sendBeacon(url, s));
    fetch(url, {
      method: 'POST',
      body: s,
      headers: { 'Content-Type': 'text/plain' },
      credentials: 'omit',
      keepalive: s.length < 2e4 // a keepalive fetch outlives the page, up to 64 KB
    }).then(
      function (r) {
        var c = r.status,
          drop = c >= 400 && c < 500 && c != 408 && c != 429;
        // Any other 4xx (a bad write key, invalid events) would fail again:
        // the batch is dropped, and the page's console says why.
        if (drop) r.text().then(function (m) {
          warn(c + ' ' + m);
        }, warn);
        done(c < 300 || drop);
      },
      function () {
        done(false);
      }
    );
  }

  function done(ok) {
    var n = inflight;
    inflight = 0;
    if (ok) {
      queue.splice(0, n);
      attempts = 0;
      save();
      schedule(0);
    } else {
      // 0.5–1 s, 1–2 s, ... up to 15–30 s: jitter spreads the browsers out
      // when the collector comes back.
      attempts++;
      schedule(Math.min(3e4, 500 * Math.pow(2, attempts)) * (0.5 + Math.random() / 2));
    }
  }

  // beacon sends what is not in flight with sendBeacon, which the browser
  // delivers after the page is gone. A refused beacon (over its quota)
  // leaves the rest in storage.
  function beacon(left) {
    clearTimeout(timer);
    timer = 0;
    var from = inflight,
      b;
    while (from < queue.length && nav.sendBeacon) {
      b = chunk(from);
      if (!nav.sendBeacon(url, body(b))) break;
      from += b.length;
    }
    queue.splice(inflight, from - inflight);
    save(left);
  }

  function enqueue(e) {
    try {
      JSON.stringify(e); // a cyclic property would break every later batch
    } catch (x) {
      return warn('event not sent: ' + x);
    }
    queue.push(e);
    if (queue.length > maxQueue) queue.splice(inflight, 1);
    if (gone) return beacon(gone > 1);
    save();
    schedule(queue.length - inflight >= flushAt ? 0 : interval);
  }

  function warn(m) {
    w.console && console.warn('tributary: ' + m);
  }

  // The API: calls never throw into the page.
  function api(f) {
    return function () {
      try {
        f.apply(t, arguments);
      } catch (e) {
        warn(e);
      }
    };
  }

  t.VERSION = VERSION;
  // page([name], [properties]): a page view.
  t.page = api(function (name, props) {
    if (typeof name == 'object') (props = name), (name = null);
    var e = { properties: pageInfo() },
      k;
    for (k in props) e.properties[k] = props[k];
    if (name) e.name = name;
    enqueue(event('page', e));
  });
  // track(event, [properties]): an action of the visitor.
  t.track = api(function (name, props) {
    enqueue(event('track', { event: name, properties: props || {} }));
  });
  // identify([userId], [traits]): who the visitor is; later events carry
  // the userId, also on later pages.
  t.identify = api(function (id, traits) {
    if (typeof id == 'object' && id) (traits = id), (id = null);
    if (id != null) set('uid', '' + id);
    enqueue(event('identify', { traits: traits || {} }));
  });
  // reset(): forget the user (on logout); a new anonymous id follows.
  t.reset = api(function () {
    set('uid');
    set('aid');
  });
  t.anonymousId = anonymousId;

  w.addEventListener('pagehide', function () {
    gone = 2;
    beacon(1);
  });
  w.addEventListener('pageshow', function (e) {
    gone = 0;
    if (e.persisted) save(); // back from the back/forward cache: the queue is ours again
  });
  d.addEventListener('visibilitychange', function () {
    if (d.visibilityState == 'hidden') {
      gone = gone || 1;
      beacon(gone > 1);
    } else {
      gone = 0;
      schedule(0);
    }
  });
  w.addEventListener('online', function () {
    attempts = 0;
    clearTimeout(timer);
    timer = 0;
    schedule(0);
  });

  if (!key) warn('no write key: set tributary.writeKey in the snippet');
  reclaim();
  save();
  schedule(0);
  // Replay the calls made before this file loaded; a stub method kept by
  // the page pushes to t.q and so still works.
  var q = t.q || [];
  t.q = {
    push: function (a) {
      t[a[0]] && t[a[0]].apply(t, [].slice.call(a, 1));
    }
  };
  for (var i = 0; i < q.length; i++) t.q.push(q[i]);
})(window, document, navigator);
