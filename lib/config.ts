import { resolve } from 'node:path'
import { FormatRegistry, type TSchema } from '@sinclair/typebox'
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value'
import { parse as parseYaml } from 'yaml'
import { ConfigSchema, SyncConfigSchema, type Config, type SyncConfig, type ServiceName } from '../schemas/config.js'
import { checkCrossKeyRules, withoutIncompleteBlocks } from './config-rules.js'

// Raised for every configuration problem; the message is one line naming the key and the rule,
// never a value (values may be secrets).
export class ConfigError extends Error {
  override name = 'ConfigError'
}

if (!FormatRegistry.Has('url')) {
  FormatRegistry.Set('url', (value) => {
    if (!URL.canParse(value)) return false
    const { protocol } = new URL(value)
    return protocol === 'http:' || protocol === 'https:'
  })
}

export function resolveConfigPath (argv: readonly string[], env: NodeJS.ProcessEnv): { path: string, explicit: boolean } {
  const flagIndex = argv.findIndex((arg) => arg === '--config' || arg.startsWith('--config='))
  if (flagIndex >= 0) {
    const flag = argv[flagIndex] ?? ''
    const value = flag.includes('=') ? flag.slice(flag.indexOf('=') + 1) : argv[flagIndex + 1]
    if (!value) throw new ConfigError('config: --config needs a file path')
    return { path: resolve(value), explicit: true }
  }
  if (env.CONFIG_FILE) return { path: resolve(env.CONFIG_FILE), explicit: true }
  return { path: resolve('config.yaml'), explicit: false }
}

function keyOf (error: ValueError): string {
  return error.path.split('/').filter(Boolean).join('.') || '(file)'
}

function describe (error: ValueError): string {
  const schema: TSchema = error.schema
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return 'is required'
    case ValueErrorType.ObjectAdditionalProperties:
      return 'is not a known configuration key'
    case ValueErrorType.Union: {
      const choices = (schema.anyOf as TSchema[] | undefined)?.map((option) => option.const).filter((value) => value !== undefined)
      return choices && choices.length > 0 ? `must be one of ${choices.join(', ')}` : 'has the wrong type'
    }
    case ValueErrorType.StringFormat:
      return schema.format === 'url' ? 'must be an http(s) URL' : `must be a ${String(schema.format)}`
    case ValueErrorType.StringPattern:
      return schema.description ? `must be: ${schema.description}` : `must match ${String(schema.pattern)}`
    default:
      return error.message.replace(/^Expected/, 'must be')
  }
}

function validate<T> (schema: TSchema, raw: unknown): T {
  const value = Value.Default(schema, Value.Clone(raw))
  const errors = [...Value.Errors(schema, value)]
  // A missing required key also fails its own type check; the first error per key is the clear one.
  const first = errors[0]
  if (first) throw new ConfigError(`config: ${keyOf(first)} ${describe(first)}`)
  return value as T
}

export interface LoadedConfig<T> {
  config: T
  warnings: string[]
}

export function parseConfig (text: string, service: 'sync'): LoadedConfig<SyncConfig>
export function parseConfig (text: string, service: 'backend'): LoadedConfig<Config>
export function parseConfig (text: string, service: ServiceName): LoadedConfig<Config | SyncConfig>
export function parseConfig (text: string, service: ServiceName): LoadedConfig<Config | SyncConfig> {
  let raw: unknown
  try {
    raw = parseYaml(text)
  } catch (error) {
    throw new ConfigError(`config: the file is not valid YAML (${(error as Error).message.split('\n')[0]})`)
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError('config: the file must hold a mapping of configuration sections')
  }
  const config = service === 'backend'
    ? validate<Config>(ConfigSchema, raw)
    : validate<SyncConfig>(SyncConfigSchema, raw)
  const findings = checkCrossKeyRules(config, service)
  const error = findings.find((finding) => finding.severity === 'error')
  if (error) throw new ConfigError(`config: ${error.key} ${error.rule}`)
  const warnings = findings
    .filter((finding) => finding.severity === 'warning')
    .map((finding) => `config: ${finding.key} ${finding.rule}`)
  return { config: withoutIncompleteBlocks(config), warnings }
}
