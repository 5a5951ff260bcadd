// The pure parts of connecting a CalDAV account in the web client: the server address it accepts,
// a sentence for each refusal, the account remembered (never the password) for a later password
// prompt, and the provider a just-made connection keeps while the stream reports on it.
import { test } from 'tap'
import { CALDAV_ACCOUNTS_KEY, calDavFailure, normaliseServerUrl, providerName, recallAccount, rememberAccount } from '../../web/src/lib/caldav.js'
import { EMPTY_SYNC_VIEW, primaryConnection, reactTo, withConnected } from '../../web/src/lib/stream-reactions.js'
import { memoryStore } from '../../web/src/lib/storage.js'

test('the server address: a missing scheme means https, what was typed is kept, other schemes are refused', async (t) => {
  t.equal(normaliseServerUrl('https://caldav.icloud.com'), 'https://caldav.icloud.com')
  t.equal(normaliseServerUrl('  caldav.icloud.com '), 'https://caldav.icloud.com', 'a bare host name')
  t.equal(normaliseServerUrl('dav.example.org:8443/remote.php/dav'), 'https://dav.example.org:8443/remote.php/dav', 'a port and a path')
  t.equal(normaliseServerUrl('http://127.0.0.1:5232'), 'http://127.0.0.1:5232', 'http stays (a server on this machine)')
  t.equal(normaliseServerUrl('HTTPS://Example.org/dav/'), 'HTTPS://Example.org/dav/')
  for (const refused of ['', '   ', 'ftp://example.org', 'https://', 'http:// space.example', 'https://a b']) {
    t.equal(normaliseServerUrl(refused), null, `refused: ${JSON.stringify(refused)}`)
  }
  t.equal(normaliseServerUrl(`https://example.org/${'a'.repeat(2048)}`), null, 'longer than the backend takes')
})

test('each refusal of the connect route is a sentence, about the field it concerns', async (t) => {
  t.match(calDavFailure(422, 'CALDAV_CONNECT_FAILED'), { field: 'credentials', message: /did not accept this address, user name and password\. Check all three; for iCloud the address is https:\/\/caldav\.icloud\.com/ })
  t.match(calDavFailure(503, 'CREDENTIAL_ENCRYPTION_KEY_MISSING'), { field: null, message: /not set up to store calendar passwords/ })
  t.match(calDavFailure(400, 'CREDENTIAL_ENCRYPTION_KEY_MISSING'), { field: null }, 'the code decides, whatever the status')
  t.match(calDavFailure(503, 'MAINTENANCE'), { field: null, message: /paused for maintenance/ })
  t.match(calDavFailure(503, 'SYNC_UNAVAILABLE'), { field: null, message: /briefly unavailable/ })
  t.match(calDavFailure(400, 'FST_ERR_VALIDATION'), { field: 'serverUrl' }, 'a body the schema refused: the address is the field people get wrong')
  t.match(calDavFailure(0, undefined), { field: null, message: /could not be reached/ })
  t.match(calDavFailure(500, 'INTERNAL'), { field: null, message: /could not be connected/ })
  for (const message of [calDavFailure(422, 'CALDAV_CONNECT_FAILED').message, calDavFailure(404, 'CONNECTION_NOT_FOUND').message]) {
    t.match(message, /^[A-Z].*\.$/, 'a sentence')
    t.notMatch(message, /[A-Z]{2,}_[A-Z]/, 'no code names')
  }
})

test('the account is remembered per connection without its password; a broken store reads as empty', async (t) => {
  const store = memoryStore()
  t.equal(recallAccount(store, 'c1'), null)
  rememberAccount(store, 'c1', { serverUrl: 'https://caldav.icloud.com', username: 'ada@example.com', password: 'secret' } as never)
  rememberAccount(store, 'c2', { serverUrl: 'https://dav.example.org', username: 'bo' })
  t.same(recallAccount(store, 'c1'), { serverUrl: 'https://caldav.icloud.com', username: 'ada@example.com' })
  t.notMatch(store.entries()[CALDAV_ACCOUNTS_KEY], /secret/, 'never the password')
  t.same(recallAccount(store, 'c2'), { serverUrl: 'https://dav.example.org', username: 'bo' })
  for (const broken of ['not json', '[1,2]', 'null', '{"c1":{"serverUrl":3}}']) {
    t.equal(recallAccount(memoryStore({ [CALDAV_ACCOUNTS_KEY]: broken }), 'c1'), null, broken)
  }
})

test('a connection made here keeps its provider through status messages that name none', async (t) => {
  let sync = withConnected(EMPTY_SYNC_VIEW, 'c1', 'caldav')
  t.match(primaryConnection(sync), { connectionId: 'c1', provider: 'caldav', status: 'SYNCING', revoked: false })
  sync = reactTo(sync, { type: 'syncStatusChanged', connectionId: 'c1', status: 'healthy' }).sync
  t.match(primaryConnection(sync), { provider: 'caldav', status: 'HEALTHY' })
  t.equal(providerName('caldav'), 'CalDAV calendar')
  t.equal(providerName('google'), 'Google Calendar')

  const early = reactTo(EMPTY_SYNC_VIEW, { type: 'syncStatusChanged', connectionId: 'c2', status: 'healthy' }).sync
  t.match(withConnected(early, 'c2', 'caldav').connections['c2'], { provider: 'caldav', status: 'HEALTHY' }, 'a status the stream sent before the answer stays')

  const revoked = reactTo(sync, { type: 'syncStatusChanged', connectionId: 'c1', status: 'attention', code: 'CONNECTION_REVOKED', retryable: false }).sync
  t.match(primaryConnection(revoked), { provider: 'caldav', status: 'RECONNECT_REQUIRED', revoked: true })
  const repaired = withConnected(revoked, 'c1', 'caldav').connections['c1']
  t.match(repaired, { status: 'SYNCING', revoked: false }, 'the password was just accepted: the revocation is over')
  t.equal(repaired?.code, undefined)
})

test('while a CalDAV connect is in flight, a connection the stream reports first is taken as that account', async (t) => {
  const early = reactTo(EMPTY_SYNC_VIEW, { type: 'syncStatusChanged', connectionId: 'c3', status: 'syncing' }, 'caldav').sync
  t.match(early.connections['c3'], { provider: 'caldav', status: 'SYNCING' })
  t.match(reactTo(EMPTY_SYNC_VIEW, { type: 'syncStatusChanged', connectionId: 'c3', status: 'syncing' }).sync.connections['c3'], { provider: 'google' }, 'otherwise Google, whose connect comes back through a page load')
  t.match(reactTo(EMPTY_SYNC_VIEW, { type: 'syncStatusChanged', connectionId: 'c3', status: 'syncing', provider: 'microsoft' }, 'caldav').sync.connections['c3'], { provider: 'microsoft' }, 'a provider the message names wins')
})
