// compose.yaml and the Containerfile's two images, checked without a container engine: the Compose
// Specification's JSON schema, the promises of the specification (127.0.0.1, runtime.version, rs0,
// no secret in the file), and that every value they read is a key of the configuration schema.
import { readFileSync } from 'node:fs'
import { test } from 'tap'
import { Ajv } from 'ajv'
import type { TSchema } from '@sinclair/typebox'
import { parse, stringify } from 'yaml'
import { parseConfig } from '../../lib/config.js'
import { COMPOSE_VARIABLES, composeEnvironment, generateSecrets, productionConfig, renderConfigYaml, STACK_NAMES, variableNameOf, WEB_BUILD_ARGS } from '../../lib/production-config.js'
import { SCHEDULER_FILE, STACK_VOLUMES, stackFiles, type StackVolume } from '../../lib/stack-steps.js'
import { ConfigSchema } from '../../schemas/config.js'
import { bundleValues, valuesFromConfigFile, valuesFromEnvironment, type WebValues } from '../../web/build.js'
import { writeTempFile } from '../processes.js'

const root = new URL('../../', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, root), 'utf8')
const composeText = read('compose.yaml')
const schema = JSON.parse(read('test/deploy/compose-spec.json')) as Record<string, unknown>

interface Service {
  image?: string
  build?: { args?: Record<string, string>, dockerfile?: string, target?: string }
  command?: string[]
  entrypoint?: string[]
  environment?: Record<string, string>
  ports?: string[]
  volumes?: string[]
  depends_on?: Record<string, { condition: string }>
  healthcheck?: { test: string[] }
  restart?: string
  user?: string
  network_mode?: string
  profiles?: string[]
  secrets?: Array<{ source: string, target: string }>
}
interface ComposeFile {
  services: Record<string, Service>
  volumes: Record<string, unknown>
  secrets: Record<string, { file: string }>
  configs?: Record<string, { file: string }>
}

// Compose's interpolation: ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}; $$ is a dollar.
function interpolate (text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\{([A-Z0-9_]+)(?:(:?)([-?])([^}]*))?\}/g, (match, name: string | undefined, colon: string, kind: string, rest: string) => {
    if (name === undefined) return '$'
    const value = env[name]
    const missing = value === undefined || (colon === ':' && value === '')
    if (!missing) return value
    if (kind === '?') throw new Error(`${name}: ${rest}`)
    return kind === '-' ? rest : ''
  })
}

function variablesIn (text: string): string[] {
  return [...new Set([...text.replace(/\$\$/g, '').matchAll(/\$\{([A-Z0-9_]+)/g)].map((match) => match[1] as string))].sort()
}

function schemaHasKey (key: string): boolean {
  let node: TSchema | undefined = ConfigSchema
  for (const part of key.split('.')) node = (node as { properties?: Record<string, TSchema> } | undefined)?.properties?.[part]
  return node !== undefined
}

function sampleConfigText (overrides: Record<string, unknown> = {}, secrets = generateSecrets()): string {
  const document = productionConfig({ webUrl: 'https://calendar.example.org', apiUrl: 'https://calendar.example.org/api', version: '1.4.0', webPort: 9443, backendPort: 3443 }, secrets)
  return renderConfigYaml({ ...document, ...overrides }, new Date())
}

const validate = new Ajv({ strict: false, allErrors: true, validateSchema: false }).compile(schema)
const raw = parse(composeText) as ComposeFile
const services = Object.entries(raw.services)
const ONE_SHOT = ['config', 'mongo-init']
const OURS = (service: Service) => service.image?.startsWith('calendar-') === true

/** The Containerfile's stages by name: the image each starts from and its text. */
const STAGES = new Map(read('Containerfile').split(/^FROM /m).slice(1).map((text) => {
  const [, from = '', name = ''] = /^(\S+) AS (\S+)/.exec(text) ?? []
  return [name, { from, text }]
}))

/** The stages an image is made of: its target, the stages it starts from, and those it copies from. */
function stagesOf (target: string): string[] {
  const stage = STAGES.get(target)
  if (stage === undefined) return []
  const copied = [...stage.text.matchAll(/--from=(\S+)/g)].map((match) => match[1] as string)
  return [target, ...[stage.from, ...copied].filter((name) => STAGES.has(name)).flatMap(stagesOf)]
}

/** What an image runs with: its target stage and the stages it starts from, not those it copies from. */
function runtimeOf (target: string): string {
  const stage = STAGES.get(target)
  return stage === undefined ? '' : stage.text + runtimeOf(stage.from)
}

test('compose.yaml is valid Compose Specification, as written and with a generated .env', async (t) => {
  validate(raw)
  t.same(validate.errors ?? [], [], 'as written')
  const env = composeEnvironment(parseConfig(sampleConfigText(), 'backend').config)
  validate(parse(interpolate(composeText, env)))
  t.same(validate.errors ?? [], [], 'with the values of a generated .env')
  t.notOk(validate({ ...raw, services: { ...raw.services, web: { ...raw.services.web, prots: ['80'] } } }), 'a misspelt key is caught: the validator is not vacuous')
  t.throws(() => interpolate(composeText, {}), /BACKEND_API_URL: .env has no BACKEND_API_URL; run npm run setup first/, 'without .env the web build stops with what to do')
})

test('every service has a restart policy; every long-running one a health check', async (t) => {
  for (const [name, service] of services) {
    if (ONE_SHOT.includes(name)) {
      t.equal(service.restart, 'no', `${name} runs once`)
      t.notOk(service.healthcheck, `${name} needs no health check`)
    } else {
      t.equal(service.restart, 'unless-stopped', `${name} restarts`)
      t.ok(Array.isArray(service.healthcheck?.test) && service.healthcheck.test[0]?.startsWith('CMD'), `${name} has a health check`)
    }
  }
  t.same(services.map(([name]) => name).sort(), ['backend', 'config', 'grafana', 'mongo', 'mongo-init', 'prometheus', 'scheduler', 'session-core', 'sessions-db', 'sync', 'web'])
})

test('only web and backend publish ports, on 127.0.0.1, at web.port and backend.port (and the monitoring profile its own, monitoring.test.ts)', async (t) => {
  const published = services.filter(([, service]) => service.ports !== undefined && service.profiles === undefined).map(([name]) => name).sort()
  t.same(published, ['backend', 'web'])
  const env = composeEnvironment(parseConfig(sampleConfigText(), 'backend').config)
  const compose = parse(interpolate(composeText, env)) as ComposeFile
  t.same(compose.services.web?.ports, ['127.0.0.1:9443:9080'])
  t.same(compose.services.backend?.ports, ['127.0.0.1:3443:3443'], 'the backend listens on backend.port inside its container too')
})

test('our images carry runtime.version as their tag (latest by default); the others are pinned', async (t) => {
  const env = composeEnvironment(parseConfig(sampleConfigText(), 'backend').config)
  const pinned = parse(interpolate(composeText, env)) as ComposeFile
  const unpinned = parse(interpolate(composeText, { BACKEND_API_URL: 'https://calendar.example.org/api' })) as ComposeFile
  for (const [name, service] of services) {
    if (OURS(service)) {
      t.match(service.image, /:\$\{RUNTIME_VERSION:-latest\}$/, `${name}`)
      t.match(pinned.services[name]?.image, /:1\.4\.0$/)
      t.match(unpinned.services[name]?.image, /:latest$/)
    } else {
      t.match(service.image, /:v?\d+(\.\d+)*(-[a-z]+)?$/, `${name} is pinned to a version`)
    }
  }
})

test('data lives in named volumes; there are no bind mounts; secret volumes are read-only where they are read', async (t) => {
  const declared = Object.keys(raw.volumes)
  for (const [name, service] of services) {
    for (const volume of service.volumes ?? []) {
      const [source = '', target, mode] = volume.split(':')
      t.ok(declared.includes(source), `${name}: ${source} is a named volume`)
      if (source.endsWith('-secrets') && name !== 'config') {
        t.equal(target, '/run/calendar', `${name} reads its secrets at /run/calendar`)
        t.equal(mode, 'ro', `${name} cannot change its secrets`)
      }
    }
  }
  t.ok(raw.services.mongo?.volumes?.includes('mongo-data:/data/db'))
  t.ok(raw.services['sessions-db']?.volumes?.includes('sessions-db-data:/var/lib/postgresql/data'))
  t.same(raw.secrets, { config: { file: './config.yaml' } }, 'config.yaml reaches the config step as a secret, never as a bind mount')
  for (const [name, config] of Object.entries(raw.configs ?? {})) t.match(config.file, /^\.\/monitoring\//, `${name}: only the monitoring kit comes in as configs`)
})

test('no secret is written in compose.yaml or reaches it through .env', async (t) => {
  const secrets = generateSecrets()
  const { config } = parseConfig(sampleConfigText({}, secrets), 'backend')
  const interpolated = interpolate(composeText, composeEnvironment(config))
  for (const secret of Object.values(secrets)) t.notOk(interpolated.includes(secret), 'a generated secret never appears in the interpolated file')

  // The values of COMPOSE_VARIABLES are public (the specification fixes them into the web bundle).
  const publicVariables: string[] = COMPOSE_VARIABLES.map(variableNameOf)
  for (const [name, service] of services) {
    for (const [variable, value] of Object.entries(service.environment ?? {})) {
      if (/PASSWORD|SECRET|TOKEN|KEY/.test(variable) && !publicVariables.includes(variable)) {
        t.match(variable, /_FILE$/, `${name}: ${variable} names a file`)
        t.match(value, /^\/run\/calendar\//)
      }
    }
  }
})

test('each container reads exactly the secret files the config step writes into its volume', async (t) => {
  const text = sampleConfigText()
  const { config } = parseConfig(text, 'backend')
  const files = stackFiles(text, parse(text) as Record<string, unknown>, config)
  const written = (volume: StackVolume) => files.filter((file) => file.volume === volume).map((file) => file.name)

  const step = raw.services.config as Service
  t.same(step.command, ['node', 'dist/bin/stack-steps.js', 'files', '--config', '/run/secrets/config.yaml', '--out', '/stack'])
  t.same(step.secrets, [{ source: 'config', target: 'config.yaml' }])
  t.same(step.volumes, STACK_VOLUMES.map((volume) => `${volume}-secrets:/stack/${volume}`), 'the step writes every volume')
  t.equal(step.network_mode, 'none')
  t.equal(step.user, '0:0', 'root, to hand each file to the user that reads it')

  const containerfile = read('Containerfile')
  t.match(containerfile, /CONFIG_FILE=\/run\/calendar\/config\.yaml/)
  for (const [name, service] of services) {
    const mount = service.volumes?.find((volume) => volume.includes(':/run/calendar'))
    const referenced = [...new Set([...JSON.stringify([service.command, service.entrypoint, service.environment, service.healthcheck]).matchAll(/\/run\/calendar\/([a-z.-]+)/g)].map((match) => match[1] as string))]
    if (mount === undefined) {
      t.same(referenced, [], `${name} reads no secret file`)
      continue
    }
    const volume = (mount.split(':')[0] ?? '').replace(/-secrets$/, '') as StackVolume
    t.ok(STACK_VOLUMES.includes(volume), `${name} mounts a volume the step writes`)
    // Our images read CONFIG_FILE, /run/calendar/config.yaml, set by the Containerfile, unless their
    // command names the file they read instead (the scheduler).
    const reads = OURS(service) && referenced.length === 0 ? ['config.yaml'] : referenced
    t.same(reads.sort(), written(volume).sort(), `${name} reads every file of ${volume} and nothing else`)
  }
  t.equal(written('sync').length, 1, 'the Sync container gets its own narrower configuration and nothing else')
})

test('the scheduler calls watch maintenance with a key only its container holds; the Sync service gets the public half', async (t) => {
  const secrets = generateSecrets()
  const text = sampleConfigText({}, secrets)
  const { config } = parseConfig(text, 'backend')
  const files = stackFiles(text, parse(text) as Record<string, unknown>, config)
  const scheduler = raw.services.scheduler as Service
  t.same(scheduler.command, ['node', 'dist/bin/stack-steps.js', 'maintenance', '--caller', `/run/calendar/${SCHEDULER_FILE}`, '--every-minutes', '30'], 'a long-running loop of the backend image')
  t.same(scheduler.volumes, ['scheduler-secrets:/run/calendar:ro'])
  t.same(scheduler.healthcheck?.test, ['CMD', 'node', 'dist/bin/stack-steps.js', 'health', 'scheduler'])

  const privateHalf = config.scheduler?.signingKey.d ?? ''
  t.ok(privateHalf.length > 0, 'the sample configuration has a scheduler key')
  const holders = files.filter((file) => file.content.includes(privateHalf)).map((file) => `${file.volume}/${file.name}`)
  t.same(holders, [`scheduler/${SCHEDULER_FILE}`], 'the private key reaches the scheduler\'s volume and no other')
  const callerFile = JSON.parse(files.find((file) => file.volume === 'scheduler')?.content ?? '{}') as unknown
  t.same(callerFile, {
    url: 'http://sync:3010/maintenance',
    audience: 'https://calendar.example.org/sync/maintenance',
    caller: STACK_NAMES.maintenanceCaller,
    signingKey: config.scheduler?.signingKey
  }, 'it calls the Sync service inside the stack, for the public URL the Sync service expects as audience')
  const syncCopy = parseConfig(files.find((file) => file.volume === 'sync')?.content ?? '', 'sync').config
  t.same(syncCopy.sync.maintenanceKey, { kty: 'OKP', crv: 'Ed25519', x: config.scheduler?.signingKey.x }, 'the Sync service gets the public half')
  t.equal(syncCopy.sync.maintenanceCaller, STACK_NAMES.maintenanceCaller)
  const backendCopy = files.find((file) => file.volume === 'backend')?.content ?? ''
  t.equal(parseConfig(backendCopy, 'backend').config.scheduler, undefined, 'the backend\'s copy has no scheduler block')
  t.match(backendCopy, /^# Production configuration of the calendar service/, 'and keeps config.yaml\'s comments')

  // scheduler.failureWebhook reaches the scheduler's file, where a failed call is reported from.
  const withHook = parse(text) as Record<string, Record<string, unknown>>
  withHook['scheduler'] = { ...withHook['scheduler'], failureWebhook: 'https://chat.example.org/hooks/T0/B0/token' }
  const hookText = stringify(withHook)
  const hooked = stackFiles(hookText, withHook, parseConfig(hookText, 'backend').config)
  t.match(JSON.parse(hooked.find((file) => file.volume === 'scheduler')?.content ?? '{}'), { failureWebhook: 'https://chat.example.org/hooks/T0/B0/token' }, 'the failure webhook is in the scheduler\'s file')
  t.same(hooked.filter((file) => file.content.includes('hooks/T0/B0/token')).map((file) => file.volume), ['scheduler'], 'and in no other volume')
})

test('the stack starts in order: files, databases, the replica set, then the services', async (t) => {
  const wants = (service: string, on: string, condition: string) =>
    t.equal(raw.services[service]?.depends_on?.[on]?.condition, condition, `${service} waits for ${on} (${condition})`)
  wants('mongo', 'config', 'service_completed_successfully')
  wants('sessions-db', 'config', 'service_completed_successfully')
  wants('session-core', 'config', 'service_completed_successfully')
  wants('mongo-init', 'mongo', 'service_healthy')
  wants('session-core', 'sessions-db', 'service_healthy')
  wants('sync', 'mongo-init', 'service_completed_successfully')
  wants('backend', 'mongo-init', 'service_completed_successfully')
  wants('backend', 'session-core', 'service_healthy')
  wants('backend', 'sync', 'service_healthy')
  wants('scheduler', 'sync', 'service_healthy')
  for (const [name, service] of services) {
    for (const on of Object.keys(service.depends_on ?? {})) t.ok(raw.services[on], `${name} depends on a service that exists`)
  }
})

test('MongoDB runs replica set rs0 with the keyfile; the configuration names the same set', async (t) => {
  const command = raw.services.mongo?.command ?? []
  t.equal(command[command.indexOf('--replSet') + 1], 'rs0')
  t.equal(command[command.indexOf('--keyFile') + 1], '/run/calendar/keyfile')
  t.equal(STACK_NAMES.replicaSet, 'rs0')
  const { config } = parseConfig(sampleConfigText(), 'backend')
  t.match(config.database.uri, /[?&]replicaSet=rs0(&|$)/)
  t.match(config.sync.databaseUri, /[?&]replicaSet=rs0(&|$)/)
})

test('every variable compose reads is a configuration key, and .env holds exactly those', async (t) => {
  t.same(variablesIn(composeText), COMPOSE_VARIABLES.map(variableNameOf).sort())
  for (const key of COMPOSE_VARIABLES) t.ok(schemaHasKey(key), `${key} is in the configuration schema`)
  t.equal(variableNameOf('maps.placesApiKey'), 'MAPS_PLACES_API_KEY')
  t.equal(variableNameOf('extprovider.clientId'), 'EXTPROVIDER_CLIENT_ID')
  const environment = raw.services.config?.environment ?? {}
  t.same(Object.keys(environment).sort(), COMPOSE_VARIABLES.map(variableNameOf).sort(), 'the config step compares every one with config.yaml')
})

test('the images read only keys of the configuration: the web image\'s build arguments are the bundle\'s keys', async (t) => {
  const argsOf = (target: string) => [...new Set(stagesOf(target).flatMap((stage) => [...(STAGES.get(stage)?.text ?? '').matchAll(/^ARG (\w+)/gm)].map((match) => match[1] as string)))].sort()
  t.same(argsOf('backend'), [], 'the backend image takes no build argument; it reads CONFIG_FILE at run time')
  t.same(argsOf('web'), Object.keys(WEB_BUILD_ARGS).sort())
  t.equal(raw.services.web?.build?.target, 'web', 'compose builds the web image from its target')
  for (const [name, service] of services) {
    if (OURS(service) && name !== 'web') t.equal(service.build?.target, 'backend', `${name} builds the backend image`)
  }
  for (const [arg, key] of Object.entries(WEB_BUILD_ARGS)) {
    t.ok(schemaHasKey(key), `${arg} comes from ${key}`)
    t.match(raw.services.web?.build?.args?.[arg], new RegExp(`^\\$\\{${variableNameOf(key)}[:}]`), `compose passes ${variableNameOf(key)} as ${arg}`)
  }

  // The image builds from the arguments (valuesFromEnvironment); npm run build:web from the file.
  // Both must give the bundle the same values.
  const text = sampleConfigText({
    extprovider: { clientId: '1234.apps.googleusercontent.com', clientSecret: 'google-secret' },
    extprovider2: { clientId: '0f3c9a2e-5b7d-4e8f-9a1b-2c3d4e5f6a7b', clientSecret: 'microsoft-secret' },
    idsignin: { servicesId: 'org.example.calendar.web', teamId: 'TEAM123456', keyId: 'KEY1234567', privateKey: '-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----' },
    analytics: { key: 'phc_key', host: 'https://analytics.example.org' },
    maps: { placesApiKey: 'places-key' }
  })
  const { config } = parseConfig(text, 'backend')
  const path = await writeTempFile('config.yaml', text)
  const env = composeEnvironment(config)
  const args = Object.fromEntries(Object.entries(WEB_BUILD_ARGS).map(([arg, key]) => [arg, env[variableNameOf(key)] ?? '']))
  const fromFile = await valuesFromConfigFile(path)
  const fromArgs = valuesFromEnvironment(args)
  const withoutEndpointBases = (values: WebValues) => ({ ...values, googleEndpointBase: undefined, microsoftEndpointBase: undefined, appleEndpointBase: undefined })
  t.same(withoutEndpointBases(fromArgs), withoutEndpointBases(fromFile))
  t.equal(fromArgs.apiUrl, 'https://calendar.example.org/api')
  t.equal(fromArgs.googleClientId, '1234.apps.googleusercontent.com')
  t.equal(fromArgs.microsoftClientId, '0f3c9a2e-5b7d-4e8f-9a1b-2c3d4e5f6a7b', 'extprovider2.clientId reaches the bundle')
  t.equal(fromArgs.appleServicesId, 'org.example.calendar.web', 'idsignin.servicesId reaches the bundle')
  t.notOk(Object.values(args).includes('microsoft-secret'), 'the Microsoft secret is no build argument')
  t.match(bundleValues(fromArgs), {
    microsoftClientId: '0f3c9a2e-5b7d-4e8f-9a1b-2c3d4e5f6a7b',
    microsoftAuthorizationEndpoint: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    appleServicesId: 'org.example.calendar.web',
    appleAuthorizationEndpoint: 'https://appleid.apple.com/auth/authorize'
  }, 'the real providers\' endpoints when no stand-in is named')
})

test('both images are multi-stage, run as node under tini, and start compiled JavaScript without tsx', async (t) => {
  for (const target of ['backend', 'web']) {
    t.ok(stagesOf(target).length >= 3, `the ${target} image is built in stages`)
    const final = runtimeOf(target)
    t.match(final, /^USER node$/m, `${target} runs as node`)
    t.match(final, /^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m)
    t.match(final, /apt-get install -y --no-install-recommends tini/)
    t.match(final, /^CMD \["node", "[\w/]+\.js"/m, 'the command is node and a .js file')
    t.notMatch(final, /tsx|npm install|npm ci/, `what ${target} runs on installs nothing and has no tsx`)
    t.notOk(stagesOf(target).includes('dependencies') && stagesOf(target).includes('web-bundle'), 'each image takes only its own stages')
  }
  t.match(STAGES.get('dependencies')?.text ?? '', /npm ci --omit=dev --ignore-scripts/)
  t.match(STAGES.get('backend')?.text ?? '', /^COPY --from=dependencies \/app\/node_modules \.\/node_modules$/m, 'the backend runs on production dependencies only')
  t.match(STAGES.get('web')?.text ?? '', /^COPY --from=web-bundle \/app\/node_modules\/yaml \.\/node_modules\/yaml$/m, 'the web server takes one package')
  const order = [...STAGES.keys()]
  t.ok(stagesOf('backend').every((stage) => order.indexOf(stage) <= order.indexOf('backend')) && order.indexOf('backend') < order.indexOf('web-bundle'),
    'the backend\'s stages come before the web client\'s, so a builder without BuildKit never needs the web build arguments for it')
  for (const [name, service] of services) {
    if (OURS(service) && service.command !== undefined) {
      t.equal(service.command[0], 'node', `${name} runs node`)
      t.match(service.command[1], /^dist\/[\w/-]+\.js$/, `${name} runs compiled output`)
    }
  }
  const ignored = read('.dockerignore').split('\n')
  for (const entry of ['config.yaml', '.env', '.data', 'node_modules', 'dist']) t.ok(ignored.includes(entry), `${entry} never enters a build context`)
})
