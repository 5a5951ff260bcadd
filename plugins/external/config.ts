import fp from 'fastify-plugin'
import type { Config } from '../../schemas/config.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

export interface ConfigPluginOptions {
  config: Config
}

export default fp<ConfigPluginOptions>(async function config (fastify, options) {
  fastify.decorate('config', options.config)
}, { name: 'config' })
