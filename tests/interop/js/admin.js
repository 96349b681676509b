// kafkajs administers a kcodec broker: node admin.js BOOTSTRAP [USER PASSWORD]
// Prints one JSON object: what each admin call returned or which error it raised.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, user, password] = process.argv.slice(2);
const config = { clientId: 'kafkajs-interop', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING,
                 retry: { retries: 1, initialRetryTime: 50 }, requestTimeout: 5000, connectionTimeout: 3000 };
if (user) config.sasl = { mechanism: 'plain', username: user, password };

async function attempt(fn) {
  try { return { ok: await fn() }; } catch (e) {
    const inner = (e.errors || []).map(x => x.type || x.name);  // KafkaJSAggregateError: one per topic
    return { error: e.type || e.name, message: e.message, errors: inner };
  }
}

async function adminScenario(admin) {
  const out = {};
  out.create = await attempt(() => admin.createTopics({ waitForLeaders: false, topics: [
    { topic: 'js-explicit', numPartitions: 3, replicationFactor: 2 },
    { topic: 'js-default' } ] }));
  out.list = await attempt(() => admin.listTopics());
  out.describeConfigs = await attempt(async () => {
    const r = await admin.describeConfigs({ includeSynonyms: false,
      resources: [{ type: 2, name: 'js-explicit', configNames: ['retention.ms', 'cleanup.policy'] }] });
    return r.resources[0].configEntries.map(c => [c.configName, c.configValue]);
  });
  out.createPartitions = await attempt(() => admin.createPartitions({ topicPartitions: [{ topic: 'js-explicit', count: 5 }] }));
  out.metadata = await attempt(async () => {
    const m = await admin.fetchTopicMetadata({ topics: ['js-explicit', 'js-default'] });
    return m.topics.map(t => [t.name, t.partitions.length, t.partitions[0].replicas.length]);
  });
  out.alreadyExists = await attempt(() => admin.createTopics({ topics: [{ topic: 'js-explicit', numPartitions: 1 }] }));
  out.badReplication = await attempt(() => admin.createTopics({ topics: [{ topic: 'js-bad', numPartitions: 1, replicationFactor: 9 }] }));
  out.deleteSystem = await attempt(() => admin.deleteTopics({ topics: ['__consumer_offsets'], timeout: 2000 }));
  out.delete = await attempt(() => admin.deleteTopics({ topics: ['js-default'], timeout: 2000 }));
  out.listAfter = await attempt(() => admin.listTopics());
  return out;
}

async function unauthorizedScenario(admin) {
  return {
    create: await attempt(() => admin.createTopics({ topics: [{ topic: 'forbidden', numPartitions: 1, replicationFactor: 1 }] })),
    delete: await attempt(() => admin.deleteTopics({ topics: ['secret'], timeout: 2000 })),
  };
}

(async () => {
  const admin = new Kafka(config).admin();
  const result = {};
  result.connect = await attempt(() => admin.connect());
  if (!result.connect.error) {
    Object.assign(result, user ? await unauthorizedScenario(admin) : await adminScenario(admin));
    await admin.disconnect();
  }
  process.stdout.write(JSON.stringify(result) + '\n');
})().catch(e => { process.stdout.write(JSON.stringify({ crash: String(e && e.stack || e) }) + '\n'); process.exit(1); });
