// A bare-metal install: MongoDB and the session core on the same host as the services. A
// production configuration with loopback addresses loads like any other (the specification asks
// nothing of the addresses); what keeps the development stand-ins out of production is the
// stand-ins themselves, which refuse to start under NODE_ENV=production (test/dev/stand-ins.test.ts).
import { test } from 'tap'
import { parseConfig } from '../../lib/config.js'
import { loadConfig } from '../../stores/config-file.js'
import { writeTempFile } from '../processes.js'
import { exampleWith } from '../config/fixtures.js'

const sameHost = {
  'database.uri': 'mongodb://root:pw@127.0.0.1:27017/calendar?authSource=admin&replicaSet=rs0',
  'sync.databaseUri': 'mongodb://sync:pw@localhost:27017/sync?authSource=sync&replicaSet=rs0',
  'sessions.uri': 'http://[::1]:3567'
}

test('production takes a database and a session core on this host, for both services, without a word', async (t) => {
  const text = exampleWith(sameHost)
  const backend = parseConfig(text, 'backend')
  t.equal(backend.config.runtime.nodeEnv, 'production')
  t.equal(backend.config.database.uri, sameHost['database.uri'])
  t.equal(backend.config.sessions.uri, sameHost['sessions.uri'])
  t.same(backend.warnings, [], 'no warning: it is a supported install')
  t.equal(parseConfig(text, 'sync').config.sync.databaseUri, sameHost['sync.databaseUri'])

  const path = await writeTempFile('config.yaml', text)
  t.same(loadConfig({ argv: ['--config', path], env: {}, service: 'backend' }).warnings, [], 'and so does a start from the file')
})
