'use strict'
// Input {brokers, topic, values: [base64], security: {ssl, sasl}}: produces the values, then
// reads them back in a consumer group from the beginning. Output {values: [base64]}.
// A failure to connect prints {error: {name, type, message}} instead.
const { client, decode, encode, run } = require('./common')

run(async ({ brokers, topic, values, security }) => {
  const kafka = client(brokers, security)
  const producer = kafka.producer()
  try {
    await producer.connect()
  } catch (error) {
    return { error: { name: error.name, type: error.type || null, message: error.message } }
  }
  try {
    await producer.send({ topic, acks: -1, messages: values.map(v => ({ value: decode(v) })) })
  } finally {
    await producer.disconnect()
  }
  const consumer = kafka.consumer({ groupId: `g-${topic}` })
  await consumer.connect()
  const got = []
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('timed out reading back')), 30000)
      consumer
        .run({
          eachMessage: async ({ message }) => {
            got.push(encode(message.value))
            if (got.length >= values.length) {
              clearTimeout(timer)
              resolve()
            }
          },
        })
        .catch(reject)
    })
  } finally {
    await consumer.disconnect()
  }
  return { values: got }
})
