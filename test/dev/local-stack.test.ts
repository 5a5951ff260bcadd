import { test } from 'tap'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { CaughtMail } from '../../dev/mail/index.js'
import { freePort } from '../helper.js'
import { startScript, waitFor } from '../processes.js'

function isRunning (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function answers (url: string): Promise<boolean> {
  try {
    return (await fetch(url)).status === 200
  } catch {
    return false
  }
}

// `npm start` with no configuration, as a newcomer runs it: the whole stack comes up, the health
// endpoint answers 200, a user can sign up, reset a forgotten password through the mail the stack
// catches, a crashed Sync service comes back by itself, and Ctrl-C stops everything with status 0.
test('npm start brings up the local stack', { timeout: 90_000 }, async (t) => {
  const ports = {
    mongo: await freePort(),
    core: await freePort(),
    sync: await freePort(),
    backend: await freePort(),
    mail: await freePort(),
    mailSmtp: await freePort()
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'calendar-stack-'))
  const env = {
    DEV_DATA_DIR: dataDir,
    DEV_MONGO_PORT: String(ports.mongo),
    DEV_SESSION_CORE_PORT: String(ports.core),
    DEV_SYNC_PORT: String(ports.sync),
    DEV_BACKEND_PORT: String(ports.backend),
    DEV_MAIL_PORT: String(ports.mail),
    DEV_MAIL_SMTP_PORT: String(ports.mailSmtp),
    LOG_LEVEL: 'warn'
  }
  const api = `http://127.0.0.1:${ports.backend}/api`
  const mailbox = `http://127.0.0.1:${ports.mail}`
  const email = 'newcomer@example.com'
  const post = async (path: string, body: unknown) => await fetch(`${api}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', rid: 'emailpassword' },
    body: JSON.stringify(body)
  })
  const fields = (values: Record<string, string>) => Object.entries(values).map(([id, value]) => ({ id, value }))
  const signIn = async (password: string) =>
    await (await post('/auth/signin', { formFields: fields({ email, password }) })).json() as { status: string }

  const stack = startScript(t, 'dev/start.ts', [], env)
  await waitFor(() => stack.output().includes('Local stack is up'), 60_000, () => stack.child.exitCode !== null)
  t.match(stack.output(), 'Local stack is up', 'the stack reports its URLs')
  t.match(stack.output(), `http://localhost:${ports.backend}/api`)
  t.match(stack.output(), `mail catcher    ${mailbox}`, 'and the mail catcher page')

  const health = await fetch(`${api}/health`)
  t.equal(health.status, 200)
  t.equal((await health.json() as { status: string }).status, 'ok')

  const signUp = await post('/auth/signup', { formFields: fields({ name: 'New Comer', email, password: 'first-try-pw-1' }) })
  t.equal(signUp.status, 200)
  t.equal((await signUp.json() as { status: string }).status, 'OK')
  t.ok(signUp.headers.get('sx-access-token'), 'a session was issued through the whole stack')

  await t.test('a forgotten password is reset through the mail the stack catches', async (t) => {
    const requested = await post('/auth/user/password/reset/token', { formFields: fields({ email }) })
    t.equal((await requested.json() as { status: string }).status, 'OK')

    let mail: CaughtMail | undefined
    await waitFor(async () => {
      const mails = await (await fetch(`${mailbox}/messages.json`)).json() as CaughtMail[]
      mail = mails.find((candidate) => candidate.envelope.to.includes(email))
      return mail !== undefined
    }, 10_000)
    t.ok(mail, 'the reset mail arrived in the mail catcher')
    t.equal(mail?.subject, 'Password reset instructions')
    t.equal(mail?.envelope.from, 'calendar@localhost')

    const link = new URL(mail?.links[0] ?? 'http://missing.invalid/')
    t.equal(`${link.origin}${link.pathname}`, 'http://localhost:9080/day', 'the link leads to the web app (web.url)')
    t.equal(link.searchParams.get('auth'), 'reset')
    const token = link.searchParams.get('token') ?? ''
    t.ok(token.length > 10, 'with its token')
    const page = await (await fetch(mailbox)).text()
    t.match(page, `href="${link.href.replaceAll('&', '&amp;')}"`, 'a person can click it on the mail catcher page')

    const reset = await post('/auth/user/password/reset', { token, formFields: fields({ password: 'a-brand-new-pw-2' }) })
    t.equal((await reset.json() as { status: string }).status, 'OK')
    t.equal((await signIn('first-try-pw-1')).status, 'WRONG_CREDENTIALS_ERROR', 'the old password no longer works')
    t.equal((await signIn('a-brand-new-pw-2')).status, 'OK', 'the new one does')
  })

  const pids: { sync?: number, backend?: number } = {}
  await t.test('a killed Sync service is restarted and the backend stays up', async (t) => {
    pids.sync = Number(/Sync service {4}\S+ {3}\(pid (\d+)\)/.exec(stack.output())?.[1])
    pids.backend = Number(/backend API .*pid (\d+)\)/.exec(stack.output())?.[1])
    t.ok(pids.sync > 0 && pids.backend > 0, 'the stack names the pids of its services')
    process.kill(pids.sync, 'SIGKILL')

    const restartLine = new RegExp(`local stack: Sync service \\(pid ${pids.sync}\\) exited with signal SIGKILL; restarting in \\d+ ms \\(attempt 1\\)`)
    const startedAgain = /local stack: Sync service started again \(pid (\d+)\)/
    t.ok(await waitFor(() => startedAgain.test(stack.output()), 15_000, () => stack.child.exitCode !== null), 'started again')
    t.match(stack.output(), restartLine, 'the restart is logged with its cause, delay and attempt')
    const newSync = Number(startedAgain.exec(stack.output())?.[1])
    t.not(newSync, pids.sync)
    pids.sync = newSync
    t.ok(await waitFor(() => answers(`http://127.0.0.1:${ports.sync}/health/live`), 30_000), 'Sync answers health again')

    t.equal(stack.child.exitCode, null, 'the stack kept running')
    t.ok(isRunning(pids.backend ?? 0), 'the backend process was left alone')
    t.equal((await fetch(`${api}/health`)).status, 200, 'and answers')
    t.equal((await signIn('a-brand-new-pw-2')).status, 'OK')
  })

  stack.child.kill('SIGINT')
  t.equal(await stack.exited, 0, 'Ctrl-C stops everything cleanly, after a restart too')
  t.notOk(isRunning(pids.sync ?? 0), 'the restarted Sync service is stopped')
  t.notOk(isRunning(pids.backend ?? 0), 'the backend is stopped')

  // The same data directory: the account, with its new password, is still there.
  const again = startScript(t, 'dev/start.ts', [], env)
  await waitFor(() => again.output().includes('Local stack is up'), 60_000, () => again.child.exitCode !== null)
  t.equal((await signIn('a-brand-new-pw-2')).status, 'OK', 'the account survived the restart')
  again.child.kill('SIGINT')
  t.equal(await again.exited, 0)
})
