// The token stores and the front token, as a client reads them: no server needed.
import { chmod, mkdir, mkdtemp, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'tap'
import { MemoryTokenStore, needsRefresh, readFrontToken, type SessionTokens } from '../../client/index.js'
import { FileTokenStore } from '../../client/file-token-store.js'

const frontToken = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64')
const tokens = (ate: number): SessionTokens => ({ accessToken: 'access', refreshToken: 'refresh', frontToken: frontToken({ uid: 'u1', ate, up: { sub: 'u1' } }) })

test('the front token: user id and access-token expiry; anything else counts as expired', async (t) => {
  t.same(readFrontToken(frontToken({ uid: 'Zoë', ate: 1000, up: { iat: 1 } })), { userId: 'Zoë', accessTokenExpiresAt: 1000, payload: { iat: 1 } }, 'UTF-8 survives')
  t.same(readFrontToken(frontToken({ uid: 'u', ate: 5 })), { userId: 'u', accessTokenExpiresAt: 5, payload: {} })
  t.equal(readFrontToken('remove'), null, 'the value the server sends when it clears the tokens')
  t.equal(readFrontToken(frontToken({ uid: 7, ate: 5 })), null)
  t.equal(needsRefresh(tokens(10_000), 9_000), false)
  t.equal(needsRefresh(tokens(10_000), 10_000), true, 'expired at its expiry')
  t.equal(needsRefresh(tokens(10_000), 9_000, 2_000), true, 'or sooner when it must last a while')
  t.equal(needsRefresh({ ...tokens(10_000), frontToken: 'garbage' }, 0), true)
})

test('the memory store keeps a copy', async (t) => {
  const store = new MemoryTokenStore()
  const kept = tokens(1)
  store.save(kept)
  kept.accessToken = 'changed'
  t.equal(store.load()?.accessToken, 'access')
  store.clear()
  t.equal(store.load(), null)
})

test('the file store: 0600 in a 0700 folder, for one API only, and forgiving of a broken file', async (t) => {
  const dir = join(await mkdtemp(join(tmpdir(), 'calendar-tokens-')), 'nested')
  const path = join(dir, 'tokens.json')
  const store = new FileTokenStore(path, 'http://localhost:3000/api')
  t.equal(await store.load(), null, 'no file yet')
  await store.save(tokens(42))
  t.equal((await stat(path)).mode & 0o777, 0o600)
  t.equal((await stat(dir)).mode & 0o777, 0o700)
  t.same(await store.load(), tokens(42))
  await chmod(path, 0o644)
  await store.save(tokens(43))
  t.equal((await stat(path)).mode & 0o777, 0o600, 'a file that was opened up is closed again')
  t.equal(await new FileTokenStore(path, 'http://elsewhere.example/api').load(), null, 'another API never gets these tokens')
  await writeFile(path, '{"apiUrl":"http://localhost:3000/api","tokens":{"accessToken":1}}')
  t.equal(await store.load(), null, 'a file without tokens')
  await writeFile(path, 'not json')
  t.equal(await store.load(), null, 'a broken file')
  await store.clear()
  await t.rejects(readFile(path), { code: 'ENOENT' })
  await store.clear()
  await t.rejects(new FileTokenStore(dir, 'x').load(), { code: 'EISDIR' }, 'an unreadable path is an error, not a sign-out')
  t.same((await readdir(dir)).filter((name) => name.endsWith('.tmp')), [], 'no temporary file is left behind')
})

test('the file store saves nothing into a folder others may write to, or through a link', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'calendar-tokens-'))
  const shared = join(root, 'shared')
  await mkdir(shared, { mode: 0o777 })
  await chmod(shared, 0o777)
  await t.rejects(new FileTokenStore(join(shared, 'tokens.json'), 'x').save(tokens(1)), /others may write to the token folder/)
  t.same(await readdir(shared), [], 'nothing written')

  const real = join(root, 'real')
  await mkdir(real, { mode: 0o700 })
  await symlink(real, join(root, 'link'))
  await t.rejects(new FileTokenStore(join(root, 'link', 'tokens.json'), 'x').save(tokens(1)), /is not a folder \(a link\?\)/)
  t.same(await readdir(real), [], 'nothing written through the link')
})
