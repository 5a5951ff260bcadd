import { readFileSync } from 'node:fs'
import { ConfigError, parseConfig, resolveConfigPath, type LoadedConfig } from '../lib/config.js'
import type { Config, ServiceName, SyncConfig } from '../schemas/config.js'

/** The configuration file a process starts with: `--config FILE`, else CONFIG_FILE, else ./config.yaml. */
export interface LoadConfigOptions<S extends ServiceName> {
  argv: readonly string[]
  env: NodeJS.ProcessEnv
  service: S
}

export function loadConfig (options: LoadConfigOptions<'sync'>): LoadedConfig<SyncConfig> & { path: string }
export function loadConfig (options: LoadConfigOptions<'backend'>): LoadedConfig<Config> & { path: string }
export function loadConfig (options: LoadConfigOptions<ServiceName>): LoadedConfig<Config | SyncConfig> & { path: string } {
  const { path } = resolveConfigPath(options.argv, options.env)
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    throw new ConfigError(`config: cannot read ${path} (pass --config FILE or set CONFIG_FILE)`)
  }
  return { ...parseConfig(text, options.service), path }
}
