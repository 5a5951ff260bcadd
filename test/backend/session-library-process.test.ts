// The session library (supertokens-node) keeps one configuration per process. The process's entry
// configures it; a second app of the same settings shares it, and one of other settings is refused
// loudly instead of being served silently with the first app's core, origins or providers.
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { test } from 'tap'
import app, { initSessionLibrary, serverOptions } from '../../app.js'
import { buildApp, signUp, startDependencies, testConfig, uniqueEmail } from '../helper.js'

test('one session library per process: the same settings share it, other settings are refused', async (t) => {
  const deps = await startDependencies(t)
  const first = await buildApp(t, deps)
  // Another app of the same service (its own database): the same library settings.
  const second = await buildApp(t, deps)
  const user = await signUp(second.app, { email: uniqueEmail('second-app'), password: 'pw-for-second-1' })
  t.equal((await second.app.inject({ method: 'GET', url: '/api/user/profile', headers: user.headers })).statusCode, 200, 'the second app signs up and serves its user')

  const withGoogle = testConfig(deps, { extra: { extprovider: { clientId: 'google-client-id.apps.example', clientSecret: 'google-client-secret' } } })
  t.throws(() => initSessionLibrary(withGoogle, first.app.log), /already configured in this process with another session core, origins, sign-in providers or mail server/,
    'configuring it again with a sign-in provider the first lacks throws')
  const otherOrigin = testConfig(deps, { extra: { web: { url: 'http://localhost:9181' }, backend: { apiUrl: 'http://localhost:3181/api', originsAllowed: ['http://localhost:9181'], serviceToken: 'b'.repeat(32) } } })
  t.throws(() => initSessionLibrary(otherOrigin, first.app.log), /already configured in this process/, 'and with other origins')

  // An app of other settings built without configuring the library: its session plugin refuses to start.
  const stray = Fastify({ ...serverOptions(withGoogle), logger: false })
  t.teardown(() => stray.close())
  await t.rejects(async () => { await stray.register(fp(app), { config: withGoogle }); await stray.ready() },
    /session library of this process is configured with another session core, origins, sign-in providers or mail server than this app's/)
})
