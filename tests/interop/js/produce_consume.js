// kafkajs produces (acks=-1 and acks=0) and consumes in a group: node produce_consume.js BOOTSTRAP TOPIC GROUP N
// Prints one JSON object: messages sent per acks, messages consumed.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, group, count] = process.argv.slice(2);
const n = parseInt(count, 10);
const kafka = new Kafka({ clientId: 'kafkajs-client', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                          retry: { retries: 2, initialRetryTime: 100 }, requestTimeout: 10000 });

(async () => {
  const out = { sent: { '-1': 0, '0': 0 }, consumed: 0 };
  const producer = kafka.producer({ allowAutoTopicCreation: true });
  await producer.connect();
  for (const acks of [-1, 0]) {
    for (let i = 0; i < n; i++) {
      await producer.send({ topic, acks, messages: [{ value: `js-${acks}-${i}` }] });
      out.sent[String(acks)] += 1;
    }
  }
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, rebalanceTimeout: 10000,
                                    heartbeatInterval: 500, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, 15000);
    consumer.run({ eachMessage: async () => {
      out.consumed += 1;
      if (out.consumed >= 2 * n) { clearTimeout(timer); resolve(); }
    } }).catch(reject);
  });
  await consumer.disconnect();
  console.log(JSON.stringify(out));
})().catch(e => { console.log(JSON.stringify({ error: e.message })); process.exit(1); });
