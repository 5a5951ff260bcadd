import { test } from 'tap'
import { ConfigError, parseConfig } from '../../lib/config.js'
import { isEmailAllowed } from '../../lib/config-rules.js'
import { exampleWith, exampleYaml } from './fixtures.js'

const KEY = 'MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY='

test('the example file is valid and fills defaults', async (t) => {
  const minimal = exampleWith({
    'web.port': undefined,
    'backend.port': undefined,
    'runtime.logLevel': undefined,
    'runtime.version': undefined,
    'sync.cloudMutationMode': undefined,
    'sync.execution': undefined
  })
  for (const text of [exampleYaml, minimal]) {
    const { config, warnings } = parseConfig(text, 'backend')
    t.equal(config.web.port, 9080)
    t.equal(config.backend.port, 3000)
    t.equal(config.runtime.logLevel, 'info')
    t.equal(config.runtime.version, 'latest')
    t.equal(config.sync.cloudMutationMode, 'enabled')
    t.equal(config.sync.execution, 'passive')
    t.same(warnings, [])
  }
})

// Each broken variant must fail with a line naming the key and the rule, and never the value.
const refusals: Array<[string, Record<string, unknown>, RegExp]> = [
  ['nodeEnv outside the three values', { 'runtime.nodeEnv': 'staging' }, /^config: runtime\.nodeEnv must be one of production, development, test$/],
  ['a timezone other than UTC', { 'runtime.timezone': 'Europe/Paris' }, /^config: runtime\.timezone must be one of Etc\/UTC, UTC$/],
  ['web.url not a URL', { 'web.url': 'calendar.example.com' }, /^config: web\.url must be an http\(s\) URL$/],
  ['apiUrl not ending in /api', { 'backend.apiUrl': 'https://calendar.example.com/v1' }, /^config: backend\.apiUrl must be: Public API URL, ending in \/api$/],
  ['originsAllowed without web.url', { 'backend.originsAllowed': ['https://other.example.com'] }, /^config: backend\.originsAllowed must include web\.url$/],
  ['a missing required key', { 'backend.serviceToken': undefined }, /^config: backend\.serviceToken is required$/],
  ['sync.serviceUrl missing', { 'sync.serviceUrl': undefined }, /^config: sync\.serviceUrl is required$/],
  ['sync.internalAuthToken missing', { 'sync.internalAuthToken': undefined }, /^config: sync\.internalAuthToken is required$/],
  ['an unknown key', { 'web.colour': 'blue' }, /^config: web\.colour is not a known configuration key$/],
  ['an unknown section', { telemetry: { on: true } }, /^config: telemetry is not a known configuration key$/],
  ['only the Google client id', { 'extprovider.clientId': 'id-123.apps.example' }, /^config: extprovider\.clientSecret must be set together with the other extprovider key \(both or none\)$/],
  ['only the Microsoft secret', { 'extprovider2.clientSecret': 'real-secret-value' }, /^config: extprovider2\.clientId must be set together/],
  ['a placeholder Google secret', { 'extprovider.clientId': 'id-123', 'extprovider.clientSecret': 'REPLACE_WITH_GOOGLE_SECRET' }, /^config: extprovider\.clientSecret must be a real value, not a placeholder$/],
  ['three of four idsignin keys', { idsignin: { servicesId: 'a', teamId: 'b', keyId: 'c' } }, /^config: idsignin\.privateKey all four idsignin keys are set together or none$/],
  ['an encryption key of 16 bytes', { 'sync.credentialEncryptionKey': 'MDEyMzQ1Njc4OWFiY2RlZg==' }, /^config: sync\.credentialEncryptionKey must be base64 of exactly 32 bytes$/],
  ['an encryption key that is not base64', { 'sync.credentialEncryptionKey': 'not base64 at all!' }, /^config: sync\.credentialEncryptionKey must be base64/],
  ['a provider without an encryption key', { 'sync.credentialEncryptionKey': undefined, extprovider: { clientId: 'id-1', clientSecret: 'secret-1' } }, /^config: sync\.credentialEncryptionKey is required when a provider calendar is configured$/],
  ['the Sync database equal to the API database', { 'sync.databaseUri': 'mongodb://sync:pw@mongo:27017/calendar?authSource=admin' }, /^config: sync\.databaseUri must name a different database than database\.uri/],
  ['mailer without apiKey', { email: { provider: 'mailer', from: 'a@example.com', webhookSecret: 'w', unsubscribeSecret: 'u' } }, /^config: email\.apiKey is required when email\.provider is mailer$/],
  ['fast schedule in production', { email: { provider: 'log', scheduleProfile: 'fast' } }, /^config: email\.scheduleProfile fast is refused when runtime\.nodeEnv is production$/],
  ['the email vendor\'s base address in production', { email: { provider: 'log', apiBase: 'http://127.0.0.1:8025' } }, /^config: email\.apiBase points at a stand-in and is refused when runtime\.nodeEnv is production$/],
  ['a Stripe stand-in address in production', { billing: { secretKey: 'sk_live_1', webhookSecret: 'whsec_1', priceId: 'price_1', publishableKey: 'pk_live_1', endpointBase: 'http://127.0.0.1:12111' } }, /^config: billing\.endpointBase points at a stand-in and is refused when runtime\.nodeEnv is production$/],
  ['an unknown email provider', { email: { provider: 'carrier-pigeon' } }, /^config: email\.provider must be one of mailer, log$/],
  ['a plain-http web.url in production', { 'web.url': 'http://calendar.example.com', 'backend.originsAllowed': ['http://calendar.example.com'] }, /^config: web\.url must be an https URL when runtime\.nodeEnv is production \(http only for localhost\)/],
  ['a plain-http API URL in production', { 'backend.apiUrl': 'http://calendar.example.com/api' }, /^config: backend\.apiUrl must be an https URL when runtime\.nodeEnv is production/],
  ['plain-http callbacks in production', { 'sync.callbackBaseUrl': 'http://calendar.example.com/sync' }, /^config: sync\.callbackBaseUrl must be an https URL/],
  ['a port out of range', { 'backend.port': 70000 }, /^config: backend\.port must be integer to be less or equal to 65535$/]
]

for (const [name, patch, expected] of refusals) {
  test(`refuses ${name}`, async (t) => {
    const error = t.throws(() => parseConfig(exampleWith(patch), 'backend')) as Error
    t.type(error, ConfigError)
    t.match(error.message, expected)
    t.notMatch(error.message, /\n/, 'one line')
    for (const value of Object.values(patch)) {
      if (typeof value === 'string' && value.length > 3) t.notOk(error.message.includes(value), 'the value is not printed')
    }
  })
}

test('http is accepted for localhost in production (a trial on the same machine) and anywhere outside production', async (t) => {
  const local = { 'web.url': 'http://localhost:9080', 'backend.originsAllowed': ['http://localhost:9080'], 'backend.apiUrl': 'http://localhost:3000/api', 'sync.callbackBaseUrl': 'http://localhost:3000/sync', 'sync.postConnectRedirectUrl': 'http://localhost:9080' }
  t.equal(parseConfig(exampleWith(local), 'backend').config.web.url, 'http://localhost:9080')
  const plain = { 'web.url': 'http://calendar.example.com', 'backend.originsAllowed': ['http://calendar.example.com'], 'runtime.nodeEnv': 'development' }
  t.equal(parseConfig(exampleWith(plain), 'backend').config.web.url, 'http://calendar.example.com')
})

test('fast schedule is accepted outside production', async (t) => {
  const { config } = parseConfig(exampleWith({ 'runtime.nodeEnv': 'development', email: { provider: 'log', scheduleProfile: 'fast' } }), 'backend')
  t.equal(config.email?.scheduleProfile, 'fast')
  t.same(config.email?.allowlist, [], 'allowlist is empty when omitted')
})

test('both provider keys with real values are accepted', async (t) => {
  const { config } = parseConfig(exampleWith({ extprovider: { clientId: 'id-1', clientSecret: 'secret-1' }, 'sync.credentialEncryptionKey': KEY }), 'backend')
  t.equal(config.extprovider?.clientId, 'id-1')
})

test('an unset postConnectRedirectUrl warns that the user would be stranded on the Sync host', async (t) => {
  const { config, warnings } = parseConfig(exampleWith({ 'sync.postConnectRedirectUrl': undefined }), 'backend')
  t.equal(config.sync.postConnectRedirectUrl, undefined)
  t.equal(warnings.length, 1)
  t.match(warnings[0], /sync\.postConnectRedirectUrl .*falls back to sync\.callbackBaseUrl.*stranded on the Sync host/)
})

test('an incomplete billing block is a warning and the block is dropped', async (t) => {
  const { config, warnings } = parseConfig(exampleWith({ billing: { secretKey: 'sk', webhookSecret: 'wh', priceId: 'price' } }), 'backend')
  t.equal(config.billing, undefined)
  t.match(warnings[0], /^config: billing\.publishableKey is missing; all four billing keys are required together/)
  const complete = parseConfig(exampleWith({ billing: { secretKey: 'sk', webhookSecret: 'wh', priceId: 'price', publishableKey: 'pk' } }), 'backend')
  t.equal(complete.config.billing?.publishableKey, 'pk')
})

test('the email allowlist is matched case-insensitively and empty means no guard', async (t) => {
  t.ok(isEmailAllowed(['Ada@Example.com'], ' ada@example.COM '))
  t.notOk(isEmailAllowed(['ada@example.com'], 'bob@example.com'))
  t.ok(isEmailAllowed([], 'anyone@example.com'))
})

test('the Sync service needs only its own block', async (t) => {
  const syncOnly = 'runtime: { nodeEnv: development, timezone: UTC }\n' +
    'sync: { databaseUri: "mongodb://127.0.0.1/sync", internalAuthToken: t0ken-value, callbackBaseUrl: "http://localhost:3010", postConnectRedirectUrl: "http://localhost:9080", serviceUrl: "http://localhost:3010" }\n'
  const { config } = parseConfig(syncOnly, 'sync')
  t.equal(config.sync.port, 3010)
  t.throws(() => parseConfig(syncOnly, 'backend'), /config: web is required/)
})

test('a file that is not YAML or not a mapping is refused in one line', async (t) => {
  t.throws(() => parseConfig('runtime: [unclosed', 'backend'), /^config: the file is not valid YAML/)
  t.throws(() => parseConfig('- a\n- b\n', 'backend'), /^config: the file must hold a mapping/)
})
