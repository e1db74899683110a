'use strict'
// Input {brokers, topic, partitions}: reads every partition from offset 0 to its high
// watermark with explicit partitions. kafkajs's consumer only reads as a group member (no
// assign()), so this drives the Fetch request through kafkajs's own cluster and broker objects
// (the same code its consumer uses, internal to the pinned 2.2.4). Output {records: [{partition,
// offset, key, value, headers: [[name, value]], timestamp}], highWatermarks: {p: offset}}.
const { client, encode, run } = require('./common')

function createCluster(kafka) {
  const symbol = Object.getOwnPropertySymbols(kafka).find(
    s => s.description === 'private:Kafka:createCluster'
  )
  if (!symbol) throw new Error('kafkajs internals changed: no createCluster')
  return kafka[symbol]({ allowAutoTopicCreation: false })
}

run(async ({ brokers, topic, partitions }) => {
  const cluster = createCluster(client(brokers))
  await cluster.connect()
  try {
    await cluster.addTargetTopic(topic)
    await cluster.refreshMetadata()
    const leaders = new Map(
      cluster.findTopicPartitionMetadata(topic).map(p => [p.partitionId, p.leader])
    )
    const records = []
    const highWatermarks = {}
    for (let partition = 0; partition < partitions; partition++) {
      const broker = await cluster.findBroker({ nodeId: leaders.get(partition) })
      let offset = 0
      for (;;) {
        const response = await broker.fetch({
          replicaId: -1,
          isolationLevel: 1,
          maxWaitTime: 100,
          minBytes: 1,
          maxBytes: 1 << 20,
          topics: [{ topic, partitions: [{ partition, fetchOffset: String(offset), maxBytes: 1 << 20 }] }],
        })
        const [answer] = response.responses[0].partitions
        if (answer.errorCode !== 0) throw new Error(`fetch error ${answer.errorCode}`)
        highWatermarks[partition] = Number(answer.highWatermark)
        const fresh = answer.messages.filter(m => Number(m.offset) >= offset)
        for (const message of fresh) {
          const headers = []
          for (const [name, value] of Object.entries(message.headers || {})) {
            for (const one of [].concat(value)) headers.push([name, encode(one)])
          }
          records.push({
            partition,
            offset: Number(message.offset),
            key: encode(message.key),
            value: encode(message.value),
            headers,
            timestamp: Number(message.timestamp),
          })
          offset = Number(message.offset) + 1
        }
        if (offset >= highWatermarks[partition]) break
        if (fresh.length === 0) throw new Error(`no progress at ${partition}:${offset}`)
      }
    }
    return { records, highWatermarks }
  } finally {
    await cluster.disconnect()
  }
})
