// kafkajs's transactional producer and consumers against the broker: node transactions.js BOOTSTRAP TOPIC GROUP
// Commits c1, c2 with the group's offset 2 (sendOffsets), aborts a1, commits c3, all to partition 0; then
// reads the topic with a read_committed and a read_uncommitted consumer. Prints one JSON line:
// {committed: [values], uncommitted: [values]} or {error}.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, group] = process.argv.slice(2);
const WAIT_MS = 15000;

async function transactions(kafka) {
  const producer = kafka.producer({ transactionalId: 'js-tx', idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    let t = await producer.transaction();
    await t.send({ topic, messages: [{ value: 'c1', partition: 0 }, { value: 'c2', partition: 0 }] });
    await t.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: '2' }] }] });
    await t.commit();
    t = await producer.transaction();
    await t.send({ topic, messages: [{ value: 'a1', partition: 0 }] });
    await t.abort();
    t = await producer.transaction();
    await t.send({ topic, messages: [{ value: 'c3', partition: 0 }] });
    await t.commit();
  } finally {
    await producer.disconnect();
  }
}

// The values one consumer reads from the start: until it has `want` of them (then half a second more, so
// that one too many shows) or WAIT_MS passed.
async function read(kafka, readUncommitted, want) {
  const consumer = kafka.consumer({ groupId: `${group}-${readUncommitted ? 'uncommitted' : 'committed'}`,
                                    readUncommitted, maxWaitTimeInMs: 100 });
  const seen = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, WAIT_MS);
      consumer.run({ eachMessage: async ({ message }) => {
        seen.push(message.value.toString());
        if (seen.length === want) { clearTimeout(timer); setTimeout(resolve, 500); }
      } }).catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

(async () => {
  const kafka = new Kafka({ clientId: 'kafkajs-transactions', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING,
                            retry: { retries: 2, initialRetryTime: 50 }, requestTimeout: 5000 });
  await transactions(kafka);
  const committed = await read(kafka, false, 3);
  const uncommitted = await read(kafka, true, 4);
  process.stdout.write(JSON.stringify({ committed, uncommitted }) + '\n');
})().catch(e => { process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + '\n'); process.exit(1); });
