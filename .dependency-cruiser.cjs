// The layering the code follows (docs/design.md), checked by `npm run lint`. Each service reads
// top-down: routes/ and plugins/ call services/, which call stores/ and clients/, over lib/ rules;
// schemas/ are the contracts both sides share.
const PRODUCT = '^(app|server)[.]ts$|^(bin|plugins|routes|services|stores|clients|schemas|lib|sync|client)/'
const STAND_INS = '^dev/(analytics|google|mail|microsoft|mongo|oidc|session-core|stand-in|stripe)/'

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A circle of imports has no top: neither side can be read, tested or moved alone.',
      from: {},
      to: { circular: true }
    },
    {
      name: 'lib-is-pure',
      severity: 'error',
      comment: 'lib/ holds rules: no Fastify, no database, no outside servers, nothing above it. A type of theirs may describe what a rule reads.',
      from: { path: '^(sync/)?lib/' },
      to: { dependencyTypesNot: ['type-only'], path: '^(bin|plugins|routes|services|stores|clients)/|^sync/(plugins|routes|services|stores|clients|providers)/|^(app|server)[.]ts$|node_modules/(fastify|fastify-plugin|@fastify/[^/]+|mongodb|undici|supertokens-node|stripe|posthog-node|tsdav|@googleapis/[^/]+|google-auth-library)/' }
    },
    {
      name: 'lib-does-no-io',
      severity: 'error',
      comment: 'lib/ rules read their input and answer: files, sockets and processes belong to the layers above (http\'s status texts and net\'s isIP are data and a rule, so those modules are not listed).',
      from: { path: '^(sync/)?lib/' },
      to: { dependencyTypes: ['core'], path: '^(node:)?(fs|fs/promises|http2|dns|dns/promises|child_process|tls|dgram|cluster|worker_threads)$' }
    },
    {
      name: 'schemas-are-contracts',
      severity: 'error',
      comment: 'schemas/ describe what crosses a boundary; they depend on TypeBox and on each other only.',
      from: { path: '^schemas/' },
      to: { pathNot: '^schemas/|node_modules/@sinclair/typebox/' }
    },
    {
      name: 'stores-below-services',
      severity: 'error',
      comment: 'A store keeps a collection; the use cases that call it live above it.',
      from: { path: '^(sync/)?stores/' },
      to: { path: '^(sync/)?(services|plugins|routes)/' }
    },
    {
      name: 'services-below-plugins',
      severity: 'error',
      comment: 'Plugins wire services into Fastify; a service never reaches back up to its wiring.',
      from: { path: '^(sync/)?(services|clients)/' },
      to: { path: '^(sync/)?(plugins|routes)/' }
    },
    {
      name: 'commands-on-top',
      severity: 'error',
      comment: 'bin/ holds the commands an operator runs (npm run setup, the stack\'s steps); nothing in the product is built on them.',
      from: { path: PRODUCT, pathNot: '^bin/' },
      to: { path: '^bin/' }
    },
    {
      name: 'stand-ins-stand-alone',
      severity: 'error',
      comment: 'A stand-in follows the real service\'s documentation, never our code: a bug shared with the product would never be caught.',
      from: { path: STAND_INS },
      to: { path: PRODUCT }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|web/dist|[.]data|[.]tap)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js', '.json'] },
    reporterOptions: { text: { highlightFocused: true } }
  }
}
