// kafkajs reads a topic as a consumer in a rack (KIP-392): node follower.js BOOTSTRAP TOPIC RACK COUNT
// Its client id is `rack-RACK-kafkajs`. Prints one JSON line: {ok: [values]} once COUNT messages came (30 s at
// most), or {error}. metadataMaxAge is short so that a preferred replica that stopped is dropped soon.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, rack, count] = process.argv.slice(2);

(async () => {
  const kafka = new Kafka({ clientId: `rack-${rack}-kafkajs`, brokers: bootstrap.split(','),
                            logLevel: logLevel.NOTHING,
                            retry: { retries: 5, initialRetryTime: 100 }, requestTimeout: 5000 });
  const consumer = kafka.consumer({ groupId: `kafkajs-rack-${process.pid}`, rackId: rack, metadataMaxAge: 1000,
                                    sessionTimeout: 10000, heartbeatInterval: 1000, maxWaitTimeInMs: 100 });
  const got = [];
  let finish;
  const done = new Promise(resolve => { finish = resolve; });
  const timer = setTimeout(() => finish(), 30000);
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ autoCommit: false, eachMessage: async ({ message }) => {
      got.push(message.value.toString());
      if (got.length >= Number(count)) finish();
    } });
    await done;
    clearTimeout(timer);
    process.stdout.write(JSON.stringify({ ok: got }) + '\n');
  } finally {
    await consumer.disconnect();
  }
})().catch(e => { process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + '\n'); process.exit(1); });
