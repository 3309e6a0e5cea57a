// Confluent's Node client, @confluentinc/schemaregistry, against the
// registry at argv[2]: register, serialize and deserialize Avro and JSON
// Schema values over two versions each, look up, check compatibility,
// change a subject's level, delete a version, list GET /schemas. Prints
// one JSON object of what it saw; registry/node_test.go asserts on it.
// With argv[3] ("user:password"), every call sends basic auth.
'use strict'
const {
  SchemaRegistryClient, SerdeType, AvroSerializer, AvroDeserializer,
  JsonSerializer, JsonDeserializer,
} = require('@confluentinc/schemaregistry')

const url = process.argv[2]
const conf = { baseURLs: [url], maxRetries: 0 }
if (process.argv[3]) {
  const [username, password] = process.argv[3].split(':')
  conf.basicAuthCredentials = { credentialsSource: 'USER_INFO', userInfo: username + ':' + password }
}
const client = new SchemaRegistryClient(conf)
const out = {}

// status of a failed call: RestError carries the HTTP status and
// Confluent's error code.
async function failure (p) {
  try {
    await p
    return { status: 0, code: 0 }
  } catch (e) {
    return { status: e.status || -1, code: e.errorCode || -1, message: String(e.message) }
  }
}

function frameID (buf) {
  if (buf[0] !== 0) throw new Error('no magic byte: ' + buf.toString('hex'))
  return buf.readUInt32BE(1)
}

async function avro () {
  const subject = 'node-clicks-value'
  const v1 = { type: 'record', name: 'Click', namespace: 'node', fields: [{ name: 'page', type: 'string' }, { name: 'n', type: 'long' }] }
  const v2 = { ...v1, fields: [...v1.fields, { name: 'ref', type: ['null', 'string'], default: null }] }
  const id1 = await client.register(subject, { schemaType: 'AVRO', schema: JSON.stringify(v1) }, false)
  const ser = new AvroSerializer(client, SerdeType.VALUE, { useLatestVersion: true })
  const de = new AvroDeserializer(client, SerdeType.VALUE, {})
  const b1 = await ser.serialize('node-clicks', { page: '/a', n: 1 })
  const id2 = await client.register(subject, { schemaType: 'AVRO', schema: JSON.stringify(v2) }, false)
  client.clearLatestCaches()
  const b2 = await ser.serialize('node-clicks', { page: '/b', n: 2, ref: 'r' })
  // A reader of either frame gets the record its writer wrote.
  const r1 = await new AvroDeserializer(client, SerdeType.VALUE, {}).deserialize('node-clicks', b1)
  const r2 = await de.deserialize('node-clicks', b2)
  const bad = { ...v1, fields: [{ name: 'page', type: 'int' }, { name: 'n', type: 'long' }] }
  out.avro = {
    ids: [id1, id2],
    frames: [frameID(b1), frameID(b2)],
    read: [r1, r2].map(r => ({ page: r.page, n: Number(r.n), ref: r.ref === undefined ? 'absent' : r.ref })),
    lookup: await client.getId(subject, { schemaType: 'AVRO', schema: JSON.stringify(v1) }, false),
    versions: await client.getAllVersions(subject),
    latest: (await client.getLatestSchemaMetadata(subject)).version,
    compatible: await client.testSubjectCompatibility(subject, { schemaType: 'AVRO', schema: JSON.stringify(bad) }),
    incompatible: await failure(client.register(subject, { schemaType: 'AVRO', schema: JSON.stringify(bad) }, false)),
  }
}

async function json () {
  const subject = 'node-orders-value'
  // Closed (additionalProperties false), as Confluent's rules want for a
  // property to be added compatibly.
  const v1 = { type: 'object', properties: { id: { type: 'string' }, cents: { type: 'integer' } }, required: ['id'], additionalProperties: false }
  const v2 = { ...v1, properties: { ...v1.properties, note: { type: 'string' } } }
  const de = new JsonDeserializer(client, SerdeType.VALUE, { validate: true })
  const id1 = await client.register(subject, { schemaType: 'JSON', schema: JSON.stringify(v1) }, false)
  const latest = new JsonSerializer(client, SerdeType.VALUE, { useLatestVersion: true, validate: true })
  const f1 = await latest.serialize('node-orders', { id: 'o1', cents: 100 })
  const id2 = await client.register(subject, { schemaType: 'JSON', schema: JSON.stringify(v2) }, false)
  client.clearLatestCaches()
  const f2 = await latest.serialize('node-orders', { id: 'o2', cents: 5, note: 'gift' })
  const invalid = await failure(latest.serialize('node-orders', { cents: 'x' }))
  await client.updateCompatibility(subject, 'FULL')
  const level = await client.getCompatibility(subject)
  // FULL: a new required property breaks old readers' data.
  const breaking = { ...v2, required: ['id', 'note'] }
  out.json = {
    ids: [id1, id2],
    frames: [frameID(f1), frameID(f2)],
    read: [await de.deserialize('node-orders', f1), await de.deserialize('node-orders', f2)],
    invalidRefusedByClient: invalid.status === -1,
    level,
    incompatible: await failure(client.register(subject, { schemaType: 'JSON', schema: JSON.stringify(breaking) }, false)),
    deleted: await client.deleteSubjectVersion(subject, 2, false),
    versionsAfterDelete: await client.getAllVersions(subject),
  }
}

async function main () {
  await avro()
  await json()
  // GET /schemas through the client's own REST stack (the client has no
  // method for it; consoles and franz-go's sr call it).
  const res = await client.restService.handleRequest('/schemas', 'GET')
  out.schemas = res.data.map(s => ({ subject: s.subject, version: s.version, id: s.id, type: s.schemaType || 'AVRO' }))
  out.subjects = await client.getAllSubjects()
  out.missing = await failure(client.getLatestSchemaMetadata('node-nobody-value'))
  console.log(JSON.stringify(out))
}

main().catch(e => { console.error(e && e.stack || e); process.exit(1) })
