import { test } from 'tap'
import { startMongo } from '../../dev/mongo/index.js'
import { startSessionCore } from '../../dev/session-core/index.js'
import { startGoogle } from '../../dev/google/index.js'
import { startMailCatcher } from '../../dev/mail/index.js'
import { wholeNumberFlag } from '../../dev/stand-in/index.js'

// What every stand-in promises (docs/design.md): development only, never in a production process.
test('every stand-in refuses to start when NODE_ENV is production', async (t) => {
  const previous = process.env['NODE_ENV']
  process.env['NODE_ENV'] = 'production'
  t.teardown(() => {
    if (previous === undefined) delete process.env['NODE_ENV']
    else process.env['NODE_ENV'] = previous
  })
  const starts: Array<[string, () => Promise<unknown>]> = [
    ['dev/mongo', async () => await startMongo()],
    ['dev/session-core', async () => await startSessionCore()],
    ['dev/google', async () => await startGoogle()],
    ['dev/microsoft', async () => await (await import('../../dev/microsoft/index.js')).startMicrosoft()],
    ['dev/mail', async () => await startMailCatcher()],
    ['dev/analytics', async () => await (await import('../../dev/analytics/index.js')).startAnalyticsStandIn()]
  ]
  for (const [name, start] of starts) {
    await t.rejects(start(), new RegExp(`^${name}.* refuses to start when NODE_ENV is production$`), name)
  }
})

test('command-line numbers', async (t) => {
  t.equal(wholeNumberFlag(undefined, 'port'), undefined)
  t.equal(wholeNumberFlag('0', 'port', 65535), 0)
  t.equal(wholeNumberFlag('4010', 'port', 65535), 4010)
  t.throws(() => wholeNumberFlag('65536', 'port', 65535), /--port must be a whole number from 0 to 65535, got "65536"/)
  t.throws(() => wholeNumberFlag('-1', 'lifetime'), /--lifetime must be a whole number/)
  t.throws(() => wholeNumberFlag('1.5', 'lifetime'), /--lifetime must be a whole number/)
})
