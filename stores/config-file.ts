import { readFileSync } from 'node:fs'
import { ConfigError, parseConfig, resolveConfigPath, type LoadedConfig } from '../lib/config.js'
import { LOOPBACK_TEST_OVERRIDE, loopbackOverride } from '../lib/loopback.js'
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
  const override = loopbackOverride(options.env[LOOPBACK_TEST_OVERRIDE], text)
  if (override === 'mismatch') {
    throw new ConfigError(`config: ${LOOPBACK_TEST_OVERRIDE} is a test-only override and does not match this configuration file; unset it`)
  }
  return { ...parseConfig(text, options.service, { acceptLoopback: override === 'granted' }), path }
}
