// kafkajs reassigns partitions on a kcodec broker: node reassign.js BOOTSTRAP STEP
// STEP "alter": start reassignments (one a stopped broker keeps pending), list them, and the errors;
// STEP "list": list what is still in progress. Prints one JSON object.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, step] = process.argv.slice(2);
const config = { clientId: 'kafkajs-reassign', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING,
                 retry: { retries: 1, initialRetryTime: 50 }, requestTimeout: 5000, connectionTimeout: 3000 };

async function attempt(fn) {
  try { return { ok: await fn() }; } catch (e) {
    const inner = (e.errors || []).map(x => [x.topic, x.partition, x.type || x.name]);
    return { error: e.type || e.name, message: e.message, errors: inner };
  }
}

const list = admin => admin.listPartitionReassignments({ timeout: 5000 });

async function alterScenario(admin) {
  return {
    alter: await attempt(() => admin.alterPartitionReassignments({ timeout: 5000, topics: [
      { topic: 'js-moving', partitionAssignment: [{ partition: 0, replicas: [3, 1] },
                                                  { partition: 1, replicas: [1, 2] }] }] })),
    listAll: await attempt(() => list(admin)),
    listNamed: await attempt(() => admin.listPartitionReassignments({ timeout: 5000,
      topics: [{ topic: 'js-moving', partitions: [0, 1] }, { topic: 'js-none', partitions: [0] }] })),
    badBroker: await attempt(() => admin.alterPartitionReassignments({ topics: [
      { topic: 'js-moving', partitionAssignment: [{ partition: 1, replicas: [1, 9] }] }] })),
    unknownTopic: await attempt(() => admin.alterPartitionReassignments({ topics: [
      { topic: 'js-none', partitionAssignment: [{ partition: 0, replicas: [1] }] }] })),
  };
}

(async () => {
  const admin = new Kafka(config).admin();
  const result = {};
  result.connect = await attempt(() => admin.connect());
  if (!result.connect.error) {
    Object.assign(result, step === 'alter' ? await alterScenario(admin) : { list: await attempt(() => list(admin)) });
    await admin.disconnect();
  }
  process.stdout.write(JSON.stringify(result) + '\n');
})().catch(e => { process.stdout.write(JSON.stringify({ crash: String(e && e.stack || e) }) + '\n'); process.exit(1); });
