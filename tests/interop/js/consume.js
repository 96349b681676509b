// kafkajs consumes a partition from the start (tests/records): node consume.js BOOTSTRAP TOPIC COUNT
// Prints one JSON line: {ok: [{offset, key, value, headers: [[name, value]], timestamp}]} (bytes as hex or
// null; a repeated header name comes back as an array, flattened here in order) or {error}.
'use strict';
const { Kafka, logLevel } = require('kafkajs');
require('./codecs');

const [bootstrap, topic, count] = process.argv.slice(2);
const hex = b => (b === null || b === undefined ? null : b.toString('hex'));

(async () => {
  const kafka = new Kafka({ clientId: 'kafkajs-records', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                            retry: { retries: 2, initialRetryTime: 100 }, requestTimeout: 5000 });
  const consumer = kafka.consumer({ groupId: `kafkajs-records-${process.pid}`, sessionTimeout: 10000,
                                    heartbeatInterval: 1000 });
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
