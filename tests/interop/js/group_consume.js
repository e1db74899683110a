'use strict'
// Input {brokers, topic, groupId, expected, timeoutMs}: a kafkajs group consumer (its default
// assigner, RoundRobinAssigner) subscribes to the topic from the beginning, reads until it has
// `expected` records, commits the next offset of each partition it read (commitOffsets, no
// auto-commit) and disconnects (LeaveGroup). Output {records: [[partition, offset]],
// protocol, assignment: [partitions], committed: {partition: offset}}.
const { client, run } = require('./common')

run(async ({ brokers, topic, groupId, expected, timeoutMs }) => {
  const consumer = client(brokers).consumer({
    groupId,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 100,
  })
  let joined = null
  consumer.on(consumer.events.GROUP_JOIN, event => {
    joined = event.payload
  })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    const records = []
    const next = {}
    let done
    const finished = new Promise((resolve, reject) => {
      done = resolve
      setTimeout(
        () => reject(new Error(`read ${records.length} of ${expected} records in ${timeoutMs} ms`)),
        timeoutMs
      ).unref()
    })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const offset = Number(message.offset)
        records.push([partition, offset])
        next[partition] = offset + 1
        if (records.length >= expected) done()
      },
    })
    await finished
    await consumer.commitOffsets(
      Object.entries(next).map(([partition, offset]) => ({
        topic,
        partition: Number(partition),
        offset: String(offset),
      }))
    )
    const assignment = joined ? (joined.memberAssignment[topic] || []).slice().sort((a, b) => a - b) : null
    return {
      records,
      protocol: joined ? joined.groupProtocol : null,
      assignment,
      committed: next,
    }
  } finally {
    await consumer.disconnect()
  }
})
