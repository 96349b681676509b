// kafkajs produces to kcodec's broker (tests/interop/test_interop_data.py):
// node produce_data.js BOOTSTRAP TOPIC CODEC ACKS IDEMPOTENT, messages on stdin as JSON [[partition, value], ...].
// One send() per 50 messages; prints one JSON line: {ok: sent} or {error}.
'use strict';
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');
require('./codecs');

const [bootstrap, topic, codec, acks, idempotent] = process.argv.slice(2);
const TYPES = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy,
                lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD };

(async () => {
  const messages = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const kafka = new Kafka({ clientId: 'kafkajs-data', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING,
                            retry: { retries: 2, initialRetryTime: 100 }, requestTimeout: 10000 });
  const producer = kafka.producer({ idempotent: idempotent === 'true', allowAutoTopicCreation: false,
                                    maxInFlightRequests: idempotent === 'true' ? 1 : undefined });
  await producer.connect();
  let sent = 0;
  try {
    for (let i = 0; i < messages.length; i += 50) {
      const chunk = messages.slice(i, i + 50).map(([partition, value]) => ({ partition, value }));
      await producer.send({ topic, messages: chunk, compression: TYPES[codec], acks: Number(acks) });
      sent += chunk.length;
    }
    process.stdout.write(JSON.stringify({ ok: sent }) + '\n');
  } finally {
    await producer.disconnect();
  }
})().catch(e => { process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + '\n'); process.exit(1); });
