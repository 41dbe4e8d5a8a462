"""song2018 ch. 7 rows say which calibrations use statistics of the released chains (privacy as labelled)."""

import pandas as pd

from dpbench.studies.song2018 import ch7_compute as ch7


def test_theta_estimated_from_the_released_chains_is_flagged():
    df = pd.DataFrame({"dataset": ["synthetic_binary_chain", "activity/cyclists", "activity/cyclists", "electricity"],
                       "series": ["mqm_exact", "mqm_approx", "group_dp", "gk16"]})
    out = ch7.label_preprocessing(df)
    assert out["preprocessing_data_dependent"].tolist() == [False, True, False, True]
    assert out.loc[1, "preprocessing"].startswith("non-private step, as in the source")
    assert ch7.label_preprocessing(df.iloc[:0]).columns.tolist()[-2:] == ["preprocessing",
                                                                         "preprocessing_data_dependent"]
