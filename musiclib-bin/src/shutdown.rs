//! Shutdown: ctrl-c or SIGTERM, broadcast to the server and every worker.

use tokio::sync::watch;

/// A shutdown signal shared by the server and the workers.
#[derive(Clone)]
pub struct Shutdown {
    receiver: watch::Receiver<bool>,
}

impl Shutdown {
    /// Starts listening for ctrl-c and SIGTERM.
    pub fn listen() -> Shutdown {
        let (sender, receiver) = watch::channel(false);
        tokio::spawn(async move {
            let ctrl_c = tokio::signal::ctrl_c();
            #[cfg(unix)]
            let terminate = async {
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(mut signal) => {
                        signal.recv().await;
                    }
                    Err(_) => std::future::pending::<()>().await,
                }
            };
            #[cfg(not(unix))]
            let terminate = std::future::pending::<()>();
            tokio::select! {
                _ = ctrl_c => {}
                _ = terminate => {}
            }
            tracing::info!("shutting down");
            let _ = sender.send(true);
        });
        Shutdown { receiver }
    }

    /// Resolves once shutdown was asked for.
    pub async fn wait(mut self) {
        let _ = self.receiver.wait_for(|stop| *stop).await;
    }
}
