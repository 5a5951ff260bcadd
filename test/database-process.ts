import type { Test } from 'tap'
import { startScript, waitFor } from './processes.js'
import { freePort } from './ports.js'

/**
 * The MongoDB stand-in in a process of its own (a replica set, so transactions run), so that a test
 * can stop it (SIGSTOP: sockets open, nothing answers, as a hung server), resume it or kill it.
 */
export async function startDatabaseProcess (t: Test) {
  const port = await freePort()
  const mongo = startScript(t, 'dev/mongo/cli.ts', ['--port', String(port), '--replica-set', 'rs0'])
  const ready = await waitFor(() => mongo.stdout().includes('mongodb://'), 20_000)
  if (!ready) throw new Error(`the MongoDB stand-in did not start: ${mongo.output()}`)
  const uri = mongo.stdout().trim().split('\n')[0] ?? ''
  const pid = mongo.child.pid
  if (pid === undefined) throw new Error('no pid')
  // A stopped process is resumed at the end, so the test's own cleanup can end it.
  t.teardown(() => { if (mongo.child.exitCode === null && mongo.child.signalCode === null) process.kill(pid, 'SIGCONT') })
  return {
    uri,
    hang: () => { process.kill(pid, 'SIGSTOP') },
    resume: () => { process.kill(pid, 'SIGCONT') },
    kill: async () => { mongo.child.kill('SIGKILL'); await mongo.exited }
  }
}
