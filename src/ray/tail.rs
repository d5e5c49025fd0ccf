//! The job log websocket (`/api/jobs/{id}/logs/tail`) as a `Stream` of text chunks.
//!
//! The handshake goes through the same reqwest client as every other call (same TLS
//! provider, token header, proxy rules and connect timeout); after the `101` the upgraded
//! connection is handed to tokio-tungstenite. Ray sends the whole log so far in the
//! first frame, then new lines as they appear, and closes about three seconds after the
//! job ends.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use reqwest::{Method, StatusCode, Version};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::client::{RayClient, innermost_cause, read_body};
use super::error as rerr;
use crate::diag::{Diag, Result};

/// Log chunks of one job as they are written. Ends when Ray closes the socket (the job
/// finished) or the connection drops; a drop shows up as one `Err` item first.
pub struct LogTail {
    socket: WebSocketStream<reqwest::Upgraded>,
    address: String,
    done: bool,
}

impl RayClient {
    /// Open the log websocket of job `id`. An unknown id is `nrl::ray::not_found`.
    pub async fn tail(&self, id: &str) -> Result<LogTail> {
        // The handshake is an HTTP/1.1 GET on the http(s) URL; only the upgrade makes it
        // a websocket, so no ws:// scheme is needed.
        let url = self.url(&["api", "jobs", id, "logs", "tail"], false);
        let key = generate_key();
        let request = self
            .http()
            .request(Method::GET, url)
            .version(Version::HTTP_11)
            .header("connection", "Upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", &key)
            .timeout(self.options().timeout);
        let timeout = self.options().timeout;
        let response = request.send().await.map_err(|e| {
            let cause = if e.is_timeout() {
                "no answer in time".to_string()
            } else {
                innermost_cause(&e)
            };
            rerr::unreachable(self.address(), timeout, &cause, 1)
        })?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND {
            return Err(rerr::job_not_found(self.address(), id));
        }
        if status != StatusCode::SWITCHING_PROTOCOLS {
            // Only the message is wanted; a body past the API limit is not Ray's.
            let limit = self.options().max_response_bytes;
            let body = read_body(response, limit).await.unwrap_or_default();
            let detail = rerr::concise_error_body(&body)
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("").to_string());
            return Err(rerr::api_failure(
                self.address(),
                "GET /api/jobs/{id}/logs/tail (websocket)",
                status.as_u16(),
                &detail,
            ));
        }
        let expected = derive_accept_key(key.as_bytes());
        let accepted = response
            .headers()
            .get("sec-websocket-accept")
            .and_then(|v| v.to_str().ok());
        if accepted != Some(expected.as_str()) {
            return Err(rerr::bad_response(
                self.address(),
                "the log websocket handshake",
                "wrong or missing Sec-WebSocket-Accept",
            ));
        }
        let upgraded = response.upgrade().await.map_err(|e| {
            rerr::bad_response(
                self.address(),
                "the log websocket upgrade",
                innermost_cause(&e),
            )
        })?;
        let socket = WebSocketStream::from_raw_socket(upgraded, Role::Client, None).await;
        Ok(LogTail {
            socket,
            address: self.address().to_string(),
            done: false,
        })
    }
}

impl Stream for LogTail {
    type Item = Result<String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            let next = Pin::new(&mut self.socket).poll_next(cx);
            match next {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) | Poll::Ready(Some(Ok(Message::Close(_)))) => {
                    self.done = true;
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Ok(Message::Text(text)))) => {
                    return Poll::Ready(Some(Ok(text.as_str().to_owned())));
                }
                Poll::Ready(Some(Ok(Message::Binary(bytes)))) => {
                    return Poll::Ready(Some(Ok(String::from_utf8_lossy(&bytes).into_owned())));
                }
                // Pings are answered by tungstenite itself; nothing to hand out.
                Poll::Ready(Some(Ok(_))) => continue,
                Poll::Ready(Some(Err(e))) => {
                    self.done = true;
                    let diag = Diag::api(
                        rerr::CODE_UNREACHABLE,
                        format!(
                            "the log stream from {} dropped: {}",
                            self.address,
                            innermost_cause(&e)
                        ),
                    );
                    return Poll::Ready(Some(Err(diag)));
                }
            }
        }
    }
}
