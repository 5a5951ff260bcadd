// A real CalDAV server for the tests: Debian's Radicale (dev/radicale.ts) on a free 127.0.0.1
// port with its own temporary storage, stopped and removed when the test ends.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startRadicale as startServer, type Radicale } from '../../../dev/radicale.js'
import { freePort, type Teardown } from '../../helper.js'

export { basic, radicaleMissing, type Radicale } from '../../../dev/radicale.js'

export async function startRadicale (t: Teardown): Promise<Radicale> {
  const folder = await mkdtemp(join(tmpdir(), 'radicale-'))
  t.teardown(() => rm(folder, { recursive: true, force: true }))
  const radicale = await startServer({ dataDir: folder, port: await freePort() })
  t.teardown(radicale.close)
  return radicale
}
