'use strict'
// Input {brokers, topic}: DeleteTopics through the admin client. Output {topics: [names]}
// (the topics listed afterwards).
const { client, run } = require('./common')

run(async ({ brokers, topic }) => {
  const admin = client(brokers).admin()
  await admin.connect()
  try {
    await admin.deleteTopics({ topics: [topic], timeout: 10000 })
    return { topics: await admin.listTopics() }
  } finally {
    await admin.disconnect()
  }
})
