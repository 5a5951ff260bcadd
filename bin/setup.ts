// `npm run setup`: writes a production config.yaml for the self-host stack, with a fresh random
// value for every secret, and the `.env` that compose.yaml reads. It never overwrites either file.
//
//   npm run setup -- [--web-url URL] [--api-url URL] [--version TAG] [--web-port N] [--backend-port N] [--dir DIR]
//   npm run setup -- --env-only [--dir DIR]      rewrite .env from an existing config.yaml
//   npm run setup -- --add-scheduler-key [--dir DIR]
//                                                add the watch-maintenance scheduler's key pair to a
//                                                config.yaml written before the scheduler existed
//
// On a terminal it asks for the public URLs it was not given; otherwise it asks nothing and uses
// the defaults (the published ports on this machine).
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readFile, rename, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { createInterface } from 'node:readline/promises'
import { parseArgs } from 'node:util'
import { parse as parseYaml, parseDocument, stringify } from 'yaml'
import { ConfigError, parseConfig, type LoadedConfig } from '../lib/config.js'
import {
  checkAnswers, composeEnvironment, defaultApiUrl, defaultWebUrl, generateSecrets, nextSteps,
  productionConfig, renderConfigYaml, renderEnvFile, SETUP_DEFAULTS, STACK_NAMES, type SetupAnswers
} from '../lib/production-config.js'
import { ed25519KeyPair } from '../lib/maintenance-token.js'
import { schedulerFindings, selfHostFindings, syncConfigDocument } from '../lib/stack-steps.js'
import type { Config } from '../schemas/config.js'

class SetupError extends Error {}

type Ask = (question: string, fallback: string) => Promise<string>

function portFlag (value: string | undefined, fallback: number): number {
  return value === undefined ? fallback : Number(value)
}

async function answersFrom (values: Record<string, string | boolean | undefined>, ask: Ask | undefined): Promise<SetupAnswers> {
  const text = (name: string) => typeof values[name] === 'string' ? values[name] : undefined
  const webPort = portFlag(text('web-port'), SETUP_DEFAULTS.webPort)
  const backendPort = portFlag(text('backend-port'), SETUP_DEFAULTS.backendPort)
  let webUrl = text('web-url')
  if (webUrl === undefined) webUrl = ask === undefined ? defaultWebUrl(webPort) : await ask('Public URL of the calendar (web.url)', defaultWebUrl(webPort))
  let apiUrl = text('api-url')
  if (apiUrl === undefined) apiUrl = ask === undefined ? defaultApiUrl(webUrl, backendPort) : await ask('Public URL of the API, ending in /api (backend.apiUrl)', defaultApiUrl(webUrl, backendPort))
  return { webUrl, apiUrl, version: text('version') ?? SETUP_DEFAULTS.version, webPort, backendPort }
}

/** A configuration the services and the stack would refuse is never written. */
function check (text: string): LoadedConfig<Config> {
  const loaded = parseConfig(text, 'backend')
  const problem = [...selfHostFindings(loaded.config), ...schedulerFindings(loaded.config)][0]
  if (problem !== undefined) throw new ConfigError(`config: ${problem.key} ${problem.rule}`)
  parseConfig(stringify(syncConfigDocument(parseYaml(text) as Record<string, unknown>, loaded.config)), 'sync')
  return loaded
}

async function main (argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'web-url': { type: 'string' },
      'api-url': { type: 'string' },
      version: { type: 'string' },
      'web-port': { type: 'string' },
      'backend-port': { type: 'string' },
      dir: { type: 'string' },
      'env-only': { type: 'boolean' },
      'add-scheduler-key': { type: 'boolean' }
    }
  })
  const dir = resolve(values.dir ?? '.')
  const configPath = join(dir, 'config.yaml')
  const envPath = join(dir, '.env')

  if (values['add-scheduler-key'] === true) {
    let text: string
    try {
      text = await readFile(configPath, 'utf8')
    } catch {
      throw new SetupError(`setup: there is no ${configPath} to read; run \`npm run setup\` without --add-scheduler-key first`)
    }
    const document = parseDocument(text)
    if (document.has('scheduler')) throw new SetupError(`setup: ${configPath} already has scheduler.signingKey; nothing was changed`)
    if (document.hasIn(['sync', 'maintenanceIssuer'])) throw new SetupError('setup: sync.maintenanceIssuer is set, and sync.maintenanceKey is its alternative; remove it first to use the stack\'s scheduler')
    const keys = ed25519KeyPair(randomBytes(32))
    if (!document.hasIn(['sync', 'maintenanceCaller'])) document.setIn(['sync', 'maintenanceCaller'], STACK_NAMES.maintenanceCaller)
    document.setIn(['sync', 'maintenanceKey'], keys.publicJwk)
    document.set('scheduler', { signingKey: keys.privateJwk })
    const updated = document.toString({ lineWidth: 0 })
    check(updated)
    // A new file renamed over the old, so an interrupted run leaves the old one whole.
    const staging = `${configPath}.${process.pid}`
    await writeFile(staging, updated, { mode: 0o600, flag: 'wx' })
    await rename(staging, configPath)
    process.stdout.write(`added scheduler.signingKey, sync.maintenanceKey and sync.maintenanceCaller to ${configPath}; start the stack again: docker compose up -d\n`)
    return
  }

  if (values['env-only'] === true) {
    let text: string
    try {
      text = await readFile(configPath, 'utf8')
    } catch {
      throw new SetupError(`setup: there is no ${configPath} to read; run \`npm run setup\` without --env-only first`)
    }
    const { config } = check(text)
    await writeFile(envPath, renderEnvFile(composeEnvironment(config)), { mode: 0o644 })
    process.stdout.write(`rewrote ${envPath} from ${configPath}; rebuild and start again: docker compose up -d --build\n`)
    return
  }

  for (const path of [configPath, envPath]) {
    if (existsSync(path)) {
      throw new SetupError(`setup: ${path} already exists and setup never overwrites it; move it away to start over, or run \`npm run setup -- --env-only\` to rewrite .env from config.yaml`)
    }
  }

  let ask: Ask | undefined
  const terminal = process.stdin.isTTY === true ? createInterface({ input: process.stdin, output: process.stdout }) : undefined
  if (terminal !== undefined) {
    ask = async (question, fallback) => (await terminal.question(`${question} [${fallback}]: `)).trim() || fallback
  }
  let answers: SetupAnswers
  try {
    answers = await answersFrom(values, ask)
  } finally {
    terminal?.close()
  }
  const problems = checkAnswers(answers)
  if (problems.length > 0) throw new SetupError(problems.map((problem) => `setup: ${problem}`).join('\n'))

  const text = renderConfigYaml(productionConfig(answers, generateSecrets()), new Date())
  const { config } = check(text)
  // 'wx' fails if the file appeared meanwhile, so nothing is ever overwritten.
  await writeFile(configPath, text, { mode: 0o600, flag: 'wx' })
  await writeFile(envPath, renderEnvFile(composeEnvironment(config)), { mode: 0o644, flag: 'wx' })
  process.stdout.write(nextSteps({ config: configPath, env: envPath }, answers))
}

try {
  await main(process.argv.slice(2))
} catch (error) {
  const message = error instanceof SetupError || error instanceof ConfigError ? error.message : `setup: ${(error as Error).message}`
  process.stderr.write(`${message}\n`)
  process.exitCode = 1
}
