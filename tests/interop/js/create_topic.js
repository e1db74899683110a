'use strict'
// Input {brokers, topic, partitions}: CreateTopics through the admin client, then the topic's
// metadata. Output {created, partitions: [{partition, leader}]}.
const { client, run } = require('./common')

run(async ({ brokers, topic, partitions }) => {
  const admin = client(brokers).admin()
  await admin.connect()
  try {
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
      waitForLeaders: true,
      timeout: 10000,
    })
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] })
    return {
      created,
      partitions: topics[0].partitions.map(p => ({ partition: p.partitionId, leader: p.leader })),
    }
  } finally {
    await admin.disconnect()
  }
})
