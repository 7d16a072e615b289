//! Internet radio: the stations of `/api/v1/radio-stations`, which apps play from the
//! station's own URL. Listed for everyone; created, changed and deleted by admins (error 50
//! for anyone else, decided in core).

use musiclib_core::ids::StationId;
use musiclib_core::stations::{Station, StationChanges, StationFields};

use crate::response::{Element, SubsonicError};
use crate::{Outcome, Reply, Request};

fn element(station: &Station) -> Element {
    Element::new("internetRadioStation")
        .attr("id", station.id.to_string())
        .attr("name", station.name.as_str())
        .attr("streamUrl", station.stream_url.as_str())
        .opt("homePageUrl", station.homepage_url.as_deref())
}

fn station_id(raw: &str) -> Result<StationId, SubsonicError> {
    StationId::parse(raw)
        .map_err(|_| SubsonicError::not_found(format_args!("internet radio station {raw}")))
}

/// `getInternetRadioStations`: every station, by name.
pub(crate) async fn list(request: &Request) -> Outcome {
    let stations = request.library.stations().list(&request.caller).await?;
    Ok(Reply::Envelope(Some(
        Element::new("internetRadioStations").list(
            "internetRadioStation",
            stations.iter().map(element).collect(),
        ),
    )))
}

/// `createInternetRadioStation`: `streamUrl`, `name`, `homepageUrl` (optional).
pub(crate) async fn create(request: &Request) -> Outcome {
    let params = &request.params;
    let fields = StationFields {
        stream_url: params.required("streamUrl")?.to_string(),
        name: params.required("name")?.to_string(),
        homepage_url: params.get("homepageUrl").map(str::to_string),
    };
    request
        .library
        .stations()
        .create(&request.caller, fields)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `updateInternetRadioStation`: `id`, `streamUrl`, `name`, `homepageUrl`. The spec makes
/// the first three required and names every field, so the update replaces the station: an
/// absent `homepageUrl` removes the home page (as Subsonic and Navidrome do).
pub(crate) async fn update(request: &Request) -> Outcome {
    let params = &request.params;
    let id = station_id(params.required("id")?)?;
    let changes = StationChanges {
        stream_url: Some(params.required("streamUrl")?.to_string()),
        name: Some(params.required("name")?.to_string()),
        homepage_url: Some(params.get("homepageUrl").map(str::to_string)),
    };
    request
        .library
        .stations()
        .update(&request.caller, &id, changes)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `deleteInternetRadioStation`: `id`.
pub(crate) async fn delete(request: &Request) -> Outcome {
    let id = station_id(request.params.required("id")?)?;
    request
        .library
        .stations()
        .delete(&request.caller, &id)
        .await?;
    Ok(Reply::Envelope(None))
}
