'use strict'
// Input {brokers, topic, timestamps}: admin.fetchTopicOffsets (earliest and latest per
// partition) and admin.fetchTopicOffsetsByTimestamp for each timestamp. Output {offsets:
// [{partition, low, high}], byTimestamp: {timestamp: [{partition, offset}]}}.
const { client, run } = require('./common')

run(async ({ brokers, topic, timestamps }) => {
  const admin = client(brokers).admin()
  await admin.connect()
  try {
    const offsets = (await admin.fetchTopicOffsets(topic)).map(o => ({
      partition: o.partition,
      low: Number(o.low),
      high: Number(o.high),
    }))
    const byTimestamp = {}
    for (const timestamp of timestamps) {
      const answer = await admin.fetchTopicOffsetsByTimestamp(topic, timestamp)
      byTimestamp[timestamp] = answer.map(o => ({ partition: o.partition, offset: Number(o.offset) }))
    }
    return { offsets, byTimestamp }
  } finally {
    await admin.disconnect()
  }
})
