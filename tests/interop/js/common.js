'use strict'
// Shared by the kafkajs scenario scripts: each reads one JSON object from stdin, runs against
// the broker named in it and prints one JSON object on stdout (logs go to stderr).
// Keys, values and header values travel base64-encoded (null stays null).

const { Kafka, logLevel, CompressionTypes, CompressionCodecs } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec

const CODECS = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
}

const stderrLogger = () => ({ namespace, level, log }) => {
  const { message, ...extra } = log
  process.stderr.write(`kafkajs ${level} ${namespace}: ${message} ${JSON.stringify(extra)}\n`)
}

// `security` ({ssl, sasl}, as kafkajs takes them) is merged into the client's options.
function client(brokers, security = {}) {
  return new Kafka({
    ...security,
    clientId: 'odradek-interop',
    brokers: [brokers],
    logLevel: process.env.KAFKAJS_DEBUG ? logLevel.DEBUG : logLevel.ERROR,
    logCreator: stderrLogger,
    retry: { retries: 3, initialRetryTime: 100 },
  })
}

const encode = buffer => (buffer == null ? null : Buffer.from(buffer).toString('base64'))
const decode = text => (text == null ? null : Buffer.from(text, 'base64'))

function run(scenario) {
  const chunks = []
  process.stdin.on('data', chunk => chunks.push(chunk))
  process.stdin.on('end', () => {
    const input = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    scenario(input).then(
      output => {
        process.stdout.write(JSON.stringify(output) + '\n')
      },
      error => {
        process.stderr.write(`${error.stack || error}\n`)
        process.exit(1)
      }
    )
  })
}

module.exports = { CODECS, client, decode, encode, run }
