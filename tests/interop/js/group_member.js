// One kafkajs consumer group member (tests/interop/test_interop_groups.py): node group_member.js BOOTSTRAP GROUP
// TOPIC NAME. Prints one JSON line per event: {assigned: [partitions]} after each join, {value: hex} per
// message (committed before the next), {error}; a line "stop" on stdin disconnects (leaving the group).
'use strict';
const readline = require('readline');
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, group, topic, name] = process.argv.slice(2);
const say = o => process.stdout.write(JSON.stringify(o) + '\n');

(async () => {
  const kafka = new Kafka({ clientId: name, brokers: bootstrap.split(','), logLevel: logLevel.NOTHING,
                            retry: { retries: 5, initialRetryTime: 100 }, requestTimeout: 10000 });
  // heartbeats go out between fetches: short long-polls keep rebalances quick
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 100,
                                    maxWaitTimeInMs: 100 });
  consumer.on(consumer.events.GROUP_JOIN, e => say({ assigned: (e.payload.memberAssignment[topic] || []) }));
  consumer.on(consumer.events.CRASH, e => say({ error: String(e.payload.error) }));
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({ autoCommit: false, eachMessage: async ({ partition, message }) => {
    say({ value: message.value.toString('hex') });
    await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
  } });
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line.trim() === 'stop') break;
  }
  await consumer.disconnect();
  process.exit(0);
})().catch(e => { say({ error: String(e && e.stack || e) }); process.exit(1); });
