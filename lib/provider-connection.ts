// Whether a user has a provider calendar connected, decided in one place for every part of the
// backend (the profile's `providerConnected`, and whether an event write has a provider effect).
// Connections belong to the Sync service; the backend knows of one from its own connect and sign-in
// flows (a linked Google account, whose refresh token it handed to Sync) or from Sync itself, which
// names the connection in every page of provider events it hands over (an import sends at least one).

export interface ConnectionFacts {
  google?: { googleId: string, gRefreshToken?: string }
  /** Connection ids the Sync service has named for this user (users plugin, `recordProviderConnection`). */
  providerConnections?: string[]
}

export function isProviderConnected (user: ConnectionFacts | null): boolean {
  if (user === null) return false
  return user.google?.googleId !== undefined || user.google?.gRefreshToken !== undefined || (user.providerConnections?.length ?? 0) > 0
}
