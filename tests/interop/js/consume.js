// kafkajs consumes a partition from the start (tests/records): node consume.js BOOTSTRAP TOPIC COUNT [RACK]
// With RACK (KIP-392, tests/interop/test_interop_followers.py) it is a consumer in that rack, client id
// `rack-RACK-kafkajs`, whose metadataMaxAge is short so that a preferred replica that stopped is dropped soon.
// Prints one JSON line: {ok: [{offset, key, value, headers: [[name, value]], timestamp}]} (bytes as hex or
// null; a repeated header name comes back as an array, flattened here in order) or {error}.
'use strict';
const { Kafka, logLevel } = require('kafkajs');
require('./codecs');

const [bootstrap, topic, count, rack] = process.argv.slice(2);
const hex = b => (b === null || b === undefined ? null : b.toString('hex'));

(async () => {
  const kafka = new Kafka({ clientId: rack ? `rack-${rack}-kafkajs` : 'kafkajs-records',
                            brokers: bootstrap.split(','), logLevel: logLevel.NOTHING,
                            retry: { retries: 2, initialRetryTime: 100 }, requestTimeout: 5000 });
  const racked = rack ? { rackId: rack, metadataMaxAge: 1000, maxWaitTimeInMs: 100 } : {};
  const consumer = kafka.consumer({ groupId: `kafkajs-records-${process.pid}`, sessionTimeout: 10000,
                                    heartbeatInterval: 1000, ...racked });
  const got = [];
  let finish;
  const done = new Promise(resolve => { finish = resolve; });
  const timer = setTimeout(() => finish(), 30000);
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ autoCommit: false, eachMessage: async ({ message }) => {
      const headers = [];
      for (const [name, v] of Object.entries(message.headers || {})) {
        for (const one of Array.isArray(v) ? v : [v]) headers.push([name, hex(one)]);
      }
      got.push({ offset: Number(message.offset), key: hex(message.key), value: hex(message.value), headers,
                 timestamp: Number(message.timestamp) });
      if (got.length >= Number(count)) finish();
    } });
    await done;
    clearTimeout(timer);
    process.stdout.write(JSON.stringify({ ok: got }) + '\n');
  } finally {
    await consumer.disconnect();
  }
})().catch(e => { process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + '\n'); process.exit(1); });
