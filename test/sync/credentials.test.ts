import { test } from 'tap'
import { createCredentialCipher, CredentialDecryptionError } from '../../sync/lib/credentials.js'
import { buildSyncApp, ENCRYPTION_KEY, newUserId, startDatabase } from './helper.js'

test('AES-256-GCM round trip, bound to its connection', async (t) => {
  const cipher = createCredentialCipher(ENCRYPTION_KEY)
  const sealed = cipher.seal('refresh-token-value', 'connection-a')
  t.notOk(sealed.includes('refresh-token-value'))
  t.equal(cipher.open(sealed, 'connection-a'), 'refresh-token-value')
  t.not(cipher.seal('refresh-token-value', 'connection-a'), sealed, 'a fresh IV each time')
  t.throws(() => cipher.open(sealed, 'connection-b'), CredentialDecryptionError, 'moved to another connection')
  const otherKey = createCredentialCipher(Buffer.alloc(32, 9).toString('base64'))
  t.throws(() => otherKey.open(sealed, 'connection-a'), CredentialDecryptionError, 'under another key')
})

test('tampered ciphertext, tag or IV is refused', async (t) => {
  const cipher = createCredentialCipher(ENCRYPTION_KEY)
  const sealed = cipher.seal('{"refreshToken":"r"}', 'c')
  const parts = sealed.split('.')
  for (const index of [1, 2, 3]) {
    const bytes = Buffer.from(parts[index] ?? '', 'base64url')
    bytes[0] = (bytes[0] ?? 0) ^ 1
    const tampered = parts.map((part, at) => at === index ? bytes.toString('base64url') : part).join('.')
    t.throws(() => cipher.open(tampered, 'c'), CredentialDecryptionError, `part ${index} flipped`)
  }
  t.throws(() => cipher.open('v2.' + parts.slice(1).join('.'), 'c'), CredentialDecryptionError, 'unknown format')
  t.throws(() => cipher.open(parts.slice(0, 3).join('.'), 'c'), CredentialDecryptionError, 'truncated')
})

test('a key that is not 32 bytes of base64 is refused without echoing it', async (t) => {
  for (const key of ['c2hvcnQ=', Buffer.alloc(31).toString('base64'), 'not base64 at all!']) {
    t.throws(() => createCredentialCipher(key), { message: 'sync.credentialEncryptionKey must be base64 of exactly 32 bytes' })
  }
})

test('stored credentials are encrypted at rest, discarded on request, and the key never reaches the log', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const credentials = built.app.syncCredentials
  const connectionId = 'bbbbbbbbbbbbbbbbbbbbbbbb'
  await credentials.save(connectionId, newUserId(), { refreshToken: 'very-secret-refresh-token' })
  const rows = built.app.syncDb.db.collection<{ _id: string, sealed: string }>('credentials')
  const row = await rows.findOne({ _id: connectionId })
  t.ok(row)
  t.notOk(JSON.stringify(row).includes('very-secret-refresh-token'), 'not stored in clear')
  t.same(await credentials.load(connectionId), { refreshToken: 'very-secret-refresh-token' })

  const parts = (row?.sealed ?? '').split('.')
  const ciphertext = Buffer.from(parts[3] ?? '', 'base64url')
  ciphertext[0] = (ciphertext[0] ?? 0) ^ 0x80
  await rows.updateOne({ _id: connectionId }, { $set: { sealed: [...parts.slice(0, 3), ciphertext.toString('base64url')].join('.') } })
  await t.rejects(credentials.load(connectionId), CredentialDecryptionError, 'tampered row is refused')

  await credentials.discard(connectionId)
  t.equal(await credentials.load(connectionId), null)
  t.notOk(JSON.stringify(built.logs).includes(ENCRYPTION_KEY))
})
