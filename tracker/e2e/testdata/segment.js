// Sends Segment calls to the tracker with Segment's own Node libraries and
// prints each event it sent as one JSON line:
//   {"library": ..., "call": ..., "params": {...}}
// for TestSegmentLibraries to find in the topic. Each library sends two
// calls alone (flushAt 1) and seven in one batch.
//
// Environment: TRACKER_URL, WRITE_KEY, RUN (makes the ids unique), and
// NODE_PATH with the packages of scripts/node-deps.sh.
'use strict';

const { Analytics } = require('@segment/analytics-node');
const LegacyAnalytics = require('analytics-node');

const host = process.env.TRACKER_URL;
const writeKey = process.env.WRITE_KEY;
const run = process.env.RUN;
// The libraries take a Date and send it in ISO 8601.
const timestamp = '2026-01-02T03:04:05.678Z';

// calls are what each library sends; the library name makes the ids unique.
function calls(lib) {
  const id = (n) => `${run}-${lib}-${n}`;
  const context = { app: { name: 'shop', version: '2.1.0' }, campaign: { name: 'spring', source: 'mail' } };
  return {
    alone: [
      ['track', { messageId: id(1), userId: `u-${lib}`, event: 'Signed Up', properties: { plan: 'pro', trial: true }, timestamp, context }],
      ['identify', { messageId: id(2), userId: `u-${lib}`, traits: { email: 'ada@example.com', name: 'Ada Lovelace', logins: 7 }, timestamp }],
    ],
    batch: [
      ['track', {
        messageId: id(3), anonymousId: `anon-${lib}`, event: 'Order Completed', timestamp, context,
        properties: {
          orderId: 'o-17', revenue: 42.5, currency: 'EUR', coupon: null, big: 9007199254740991,
          products: [{ sku: 'SKU-1', name: 'Crème brûlée ☕', qty: 2, price: 12.25 }, { sku: 'SKU-2', qty: 1, price: 18 }],
        },
      }],
      ['track', { messageId: id(4), userId: `u-${lib}`, event: 'Product Viewed', properties: { sku: 'SKU-2', tags: ['a', 'b'] }, timestamp }],
      ['identify', { messageId: id(5), anonymousId: `anon-${lib}`, traits: { plan: 'free', address: { city: 'Zürich', zip: '8001' } }, timestamp }],
      ['page', { messageId: id(6), userId: `u-${lib}`, category: 'Docs', name: 'Start', properties: { path: '/docs/start', title: 'Start' }, timestamp }],
      ['group', { messageId: id(7), userId: `u-${lib}`, groupId: `g-${lib}`, traits: { name: 'Acme', employees: 120 }, timestamp }],
      ['alias', { messageId: id(8), userId: `u-${lib}`, previousId: `anon-${lib}`, timestamp }],
      ['track', { messageId: id(9), userId: `u-${lib}`, event: 'Empty', timestamp }],
    ],
  };
}

function print(library, call, params) {
  process.stdout.write(JSON.stringify({ library, call, params }) + '\n');
}

// wire prints a request body as the library sent it.
function wire(library, body) {
  process.stdout.write(JSON.stringify({ library, wire: typeof body == 'string' ? JSON.parse(body) : body }) + '\n');
}

async function segmentNext() {
  const lib = 'analytics-node-next';
  const { alone, batch } = calls(lib);
  const send = async (flushAt, list) => {
    const a = new Analytics({ writeKey, host, flushAt, flushInterval: 60000, maxRetries: 2, httpRequestTimeout: 10000 });
    let failed = null;
    a.on('error', (err) => { failed = err; });
    a.on('http_request', (req) => wire(lib, req.body));
    for (const [call, params] of list) {
      a[call]({ ...params, timestamp: new Date(params.timestamp) });
      print(lib, call, params);
    }
    await a.closeAndFlush({ timeout: 20000 });
    if (failed) throw new Error(`@segment/analytics-node: ${failed.code || ''} ${failed.reason || failed.message || failed}`);
  };
  await send(1, alone);
  await send(20, batch);
}

async function segmentLegacy() {
  const lib = 'analytics-node';
  const { alone, batch } = calls(lib);
  const send = async (flushAt, list) => {
    const a = new LegacyAnalytics(writeKey, { host, flushAt, flushInterval: 60000, retryCount: 2 });
    const errors = [];
    a.axiosInstance.interceptors.request.use((req) => {
      wire(lib, req.data);
      return req;
    });
    const sent = list.map(([call, params]) => new Promise((resolve) => {
      a[call]({ ...params, timestamp: new Date(params.timestamp) }, (err) => { if (err) errors.push(err); resolve(); });
      print(lib, call, params);
    }));
    await new Promise((resolve, reject) => a.flush((err) => (err ? reject(err) : resolve())));
    await Promise.all(sent);
    if (errors.length) throw new Error(`analytics-node: ${errors[0].message || errors[0]}`);
  };
  await send(1, alone);
  await send(20, batch);
}

segmentNext()
  .then(segmentLegacy)
  .catch((err) => {
    console.error(err && err.stack ? err.stack : err);
    process.exit(1);
  });
