// Whether this backend process should be sent requests now (a load balancer's or Kubernetes'
// readiness probe), apart from whether it is alive at all (liveness) and from the specification's
// /api/health, which checks the database only. Ready means: the database and the session core
// answer, and the process is not shedding load. A dependency that is down takes the process out
// of rotation instead of letting it answer 503s; it comes back by itself.

export interface ReadinessProbes {
  /** The database answered a ping within its deadline. */
  database: () => Promise<boolean>
  /** The session core served its signing keys within its deadline. */
  sessionCore: () => Promise<boolean>
  /** The process is shedding requests (its event loop is saturated). */
  overloaded: () => boolean
}

export interface Readiness {
  ready: boolean
  checks: { database: 'ok' | 'error', sessionCore: 'ok' | 'error', load: 'ok' | 'overloaded' }
}

export function createReadiness (probes: ReadinessProbes): { check: () => Promise<Readiness> } {
  return {
    check: async () => {
      const [database, sessionCore] = await Promise.all([probes.database(), probes.sessionCore()])
      const overloaded = probes.overloaded()
      return {
        ready: database && sessionCore && !overloaded,
        checks: { database: database ? 'ok' : 'error', sessionCore: sessionCore ? 'ok' : 'error', load: overloaded ? 'overloaded' : 'ok' }
      }
    }
  }
}
