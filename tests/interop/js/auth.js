// kafkajs logs in to a kcodec broker with each SASL mechanism, or a client certificate: node auth.js CASES_JSON
// CASES_JSON: [{name, brokers, ca (PEM file or null), mechanism (null: no SASL), username, password, token,
// cert, key (PEM files: mutual TLS)}]; for each case the admin client connects and lists topics.
// Prints one JSON object: {name: {ok: [topics]} | {error, message}}.
'use strict';
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

function sasl(c) {
  if (c.mechanism === 'OAUTHBEARER') return { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: c.token }) };
  return { mechanism: c.mechanism.toLowerCase(), username: c.username, password: c.password };
}

async function run(c) {
  const config = { clientId: 'kafkajs-auth', brokers: c.brokers.split(','), logLevel: logLevel.NOTHING,
                   sasl: c.mechanism ? sasl(c) : undefined, retry: { retries: 0 }, requestTimeout: 5000,
                   connectionTimeout: 3000 };
  if (c.ca) config.ssl = { ca: [fs.readFileSync(c.ca, 'utf-8')] };  // node checks the host name (IP SANs too)
  if (c.cert) Object.assign(config.ssl, { cert: fs.readFileSync(c.cert, 'utf-8'), key: fs.readFileSync(c.key, 'utf-8') });
  const admin = new Kafka(config).admin();
  try {
    await admin.connect();
    return { ok: await admin.listTopics() };
  } catch (e) {
    return { error: e.type || e.name, message: e.message };
  } finally {
    await admin.disconnect();
  }
}

(async () => {
  const out = {};
  for (const c of JSON.parse(process.argv[2])) out[c.name] = await run(c);
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch(e => { process.stdout.write(JSON.stringify({ crash: String(e && e.stack || e) }) + '\n'); process.exit(1); });
