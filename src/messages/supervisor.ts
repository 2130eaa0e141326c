/** What actors may ask of the supervisor. */
export interface SupervisorApi {
  /** Prometheus text of every actor's registry merged with the process metrics. */
  metricsText(): Promise<string>;
}
