// kafkajs produces a known set of messages (tests/records): node produce.js BOOTSTRAP TOPIC CODEC IDEMPOTENT
// Reads the messages as JSON on stdin ([{key, value, headers: [[name, value]], timestamp}], bytes as hex or
// null), sends them to partition 0 in one send() (one batch) and prints one JSON line: {ok} or {error}.
'use strict';
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');
require('./codecs');

const [bootstrap, topic, codec, idempotent] = process.argv.slice(2);
const TYPES = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy,
                lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD };
const hex = h => (h === null ? null : Buffer.from(h, 'hex'));

function message(m) {
  // kafkajs takes headers as an object; an array value writes the name once per element, in order.
  const headers = {};
  for (const [name, value] of m.headers) (headers[name] = headers[name] || []).push(hex(value));
  return { key: hex(m.key), value: hex(m.value), headers, timestamp: String(m.timestamp), partition: 0 };
}

(async () => {
  const messages = JSON.parse(require('fs').readFileSync(0, 'utf8')).map(message);
  const kafka = new Kafka({ clientId: 'kafkajs-records', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                            retry: { retries: 1, initialRetryTime: 50 }, requestTimeout: 5000 });
  const producer = kafka.producer({ idempotent: idempotent === 'true', allowAutoTopicCreation: false,
                                    maxInFlightRequests: idempotent === 'true' ? 1 : undefined });
  await producer.connect();
  try {
    const r = await producer.send({ topic, messages, compression: TYPES[codec], acks: -1 });
    process.stdout.write(JSON.stringify({ ok: r }) + '\n');
  } finally {
    await producer.disconnect();
  }
})().catch(e => { process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + '\n'); process.exit(1); });
