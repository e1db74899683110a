'use strict'
// Input {brokers, topic, codec, records: [{key, value, headers: [[name, value]], timestamp,
// partition}]}: one producer.send with acks=-1. Output {metadata: [{partition, baseOffset}]}.
const { CODECS, client, decode, run } = require('./common')

run(async ({ brokers, topic, codec, records }) => {
  const producer = client(brokers).producer({ allowAutoTopicCreation: false })
  await producer.connect()
  try {
    const messages = records.map(record => {
      const headers = {}
      for (const [name, value] of record.headers) {
        // kafkajs takes headers as an object; a repeated name takes an array of values.
        const bytes = decode(value)
        if (name in headers) {
          headers[name] = [].concat(headers[name], [bytes])
        } else {
          headers[name] = bytes
        }
      }
      const message = {
        key: decode(record.key),
        value: decode(record.value),
        headers,
        timestamp: String(record.timestamp),
      }
      if (record.partition !== null) {
        message.partition = record.partition
      }
      return message
    })
    const metadata = await producer.send({
      topic,
      acks: -1,
      compression: CODECS[codec],
      messages,
    })
    return {
      metadata: metadata.map(m => ({
        partition: m.partition,
        errorCode: m.errorCode,
        baseOffset: Number(m.baseOffset),
      })),
    }
  } finally {
    await producer.disconnect()
  }
})
