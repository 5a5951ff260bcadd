// The outcome of one calendar connect round trip as the connect funnel's two analytics events
// name it (oauth_callback's `outcome`, oauth_return's `status`): the statuses of the Sync service's
// redirect, plus `conflict` for a provider account another user holds. The backend's connect route
// and the web client that called it derive it from the same refusal code, so the pair agrees.
export type ConnectOutcome = 'connected' | 'denied' | 'expired' | 'mismatch' | 'conflict' | 'error'

/** `null`: the connect succeeded; otherwise the code of the refusal (undefined when it had none). */
export function connectOutcome (refusalCode: string | undefined | null): ConnectOutcome {
  if (refusalCode === null) return 'connected'
  switch (refusalCode) {
    case 'EXTERNAL_CONNECT_EMAIL_MISMATCH': return 'mismatch'
    case 'EXTERNAL_ACCOUNT_ALREADY_CONNECTED': return 'conflict'
    case 'SCOPES_INCOMPLETE':
    case 'OFFLINE_ACCESS_MISSING': return 'denied'
    default: return 'error'
  }
}
